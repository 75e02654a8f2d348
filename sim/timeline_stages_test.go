package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// stagesPlan is a deep pipeline of the seed model: layers layers over pp
// stages of tp ranks (layerMap, when set, gives each layer's stage),
// microbatches micro-batches, gpusPerNode GPUs per node.
func stagesPlan(t testing.TB, layers, tp, pp, microbatches, gpusPerNode int, layerMap []int) *partition.Plan {
	t.Helper()
	lm := ""
	if layerMap != nil {
		s := make([]string, len(layerMap))
		for i, st := range layerMap {
			s[i] = fmt.Sprint(st)
		}
		lm = "layer_map = [" + strings.Join(s, ", ") + "]\n"
	}
	gpus := tp * pp
	text := fmt.Sprintf(`version = 1
name = "stages"
[model]
preset = "seed-dense16"
layers = %d
[workload]
batch = 8
context = 1000
output_tokens = 64
phases = ["prefill", "decode"]
[parallel]
tp = %d
pp = %d
microbatches = %d
%s[hardware]
preset = "h100-sxm"
[topology]
preset = "dgx-h100x2"
nodes = %d
gpus_per_node = %d
`, layers, tp, pp, microbatches, lm, (gpus+gpusPerNode-1)/gpusPerNode, gpusPerNode)
	return planOfText(t, text, "stages")
}

// The timeline and estimate with alike stages written equal, to the bit,
// those that simulate every stage (noStageWrites), and within steadyRelTol
// the stepwise reference (every stage, decode step and chunk simulated);
// and the stages written are those derived by hand: in a pipeline of alike
// links, every stage from the third to the one before the last (the first
// has the input op, the second receives from it and is the template, the
// last has the LM head), in the prefill and in every decode step simulated;
// with a node boundary every fourth stage's link, only the stages whose
// both links are those of the stage before; with stages of 1 and 2 layers
// in turn, none.
func TestAlikeStagesMatchStepwise(t *testing.T) {
	if testing.Short() {
		t.Skip("estimates deep pipelines three times")
	}
	alt := make([]int, 96) // 64 stages of 1 and 2 layers in turn
	for l, st := 0, 0; st < 64; st++ {
		for range 1 + st%2 {
			alt[l] = st
			l++
		}
	}
	for _, c := range []alikeCase{
		// 64 stages of TP 2, one per node (every link between stages
		// inter-node): stages 2 … 62, 61.
		{"64 stages, 1 micro-batch", stagesPlan(t, 64, 2, 64, 1, 2, nil), 61, true},
		{"64 stages, 4 micro-batches", stagesPlan(t, 64, 2, 64, 4, 2, nil), 61, true},
		// 256 stages of TP 1 (every rank simulated, no collectives):
		// stages 2 … 254, 253.
		{"256 stages, TP 1, 1 micro-batch", stagesPlan(t, 256, 1, 256, 1, 1, nil), 253, true},
		{"256 stages, TP 1, 4 micro-batches", stagesPlan(t, 256, 1, 256, 4, 1, nil), 253, true},
		// Four stages of TP 2 per node of 8: stage s receives across nodes
		// where s mod 4 = 0 and sends across where s mod 4 = 3, so only
		// s mod 4 = 2 (2, 6, …, 62) has the links of s − 1: 16.
		{"64 stages, a node boundary every 4", stagesPlan(t, 64, 2, 64, 1, 8, nil), 16, true},
		// 1 and 2 layers in turn: no stage runs the ops of the one before.
		{"64 stages of 1 and 2 layers", stagesPlan(t, 96, 2, 64, 2, 2, alt), 0, true},
		// Stages 2 … 998; TestSteadyStateMatchesStepwise compares it with
		// the stepwise run.
		{"100,000 GPUs", largePlan(t), 997, false},
	} {
		t.Run(c.label, func(t *testing.T) { c.check(t) })
	}
}

// alikeCase is a plan of TestAlikeStagesMatchStepwise.
type alikeCase struct {
	label string
	plan  *partition.Plan
	// perSegment is how many stages are written in each segment (the
	// prefill and each simulated decode step).
	perSegment int
	stepwise   bool // also compared with the stepwise reference
}

func (c alikeCase) check(t *testing.T) {
	got, err := EstimatePlan(c.plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := EstimatePlan(c.plan, Options{noStageWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Timeline.stagesWritten != 0 {
		t.Errorf("%d segments written with the writes off", ref.Timeline.stagesWritten)
	}
	steps := 16 // decode steps simulated: up to the steady state, else all
	if s := got.Timeline.settled; s > 0 {
		steps = s + 1
	}
	if want := c.perSegment * (1 + steps); got.Timeline.stagesWritten != want {
		t.Errorf("%d segments written, want %d (%d stages × the prefill and %d decode steps)",
			got.Timeline.stagesWritten, want, c.perSegment, steps)
	}
	t.Logf("%d segments written, %d decode steps simulated", got.Timeline.stagesWritten, steps)
	// Bit for bit: every slice and every number of the estimate.
	gt, rt := *got.Timeline, *ref.Timeline
	gt.stagesWritten = 0
	gs, rs := gt.List(), rt.List()
	gt.Slices, rt.Slices, gt.packed, rt.packed = nil, nil, nil, nil // compared as expanded
	if !reflect.DeepEqual(&gt, &rt) || !reflect.DeepEqual(gs, rs) {
		if len(gs) != len(rs) {
			t.Errorf("%d slices, every stage simulated %d", len(gs), len(rs))
		}
		for i := range min(len(gs), len(rs)) {
			if g, w := gs[i], rs[i]; !reflect.DeepEqual(g, w) {
				t.Errorf("slice %d: %+v, every stage simulated %+v", i, g, w)
				break
			}
		}
		t.Errorf("the timeline differs from the one with every stage simulated")
	}
	g, r := *got, *ref
	g.Timeline, r.Timeline = nil, nil
	if !reflect.DeepEqual(g, r) {
		t.Errorf("the estimate differs from the one with every stage simulated")
	}
	if c.stepwise {
		want, err := EstimatePlan(c.plan, Options{stepwise: true})
		if err != nil {
			t.Fatal(err)
		}
		if want.Timeline.stagesWritten != 0 {
			t.Errorf("the stepwise reference wrote %d segments", want.Timeline.stagesWritten)
		}
		steadyCompareEstimates(t, c.label, got, want)
		steadyCompareTimelines(t, c.label, got.Timeline, want.Timeline)
	}
}

// largePlan is BenchmarkDryRun's 100,000-GPU plan.
func largePlan(t testing.TB) *partition.Plan {
	t.Helper()
	return planOfText(t, largeDryRunConfig, "large")
}

// planOfText is the plan of a config given as TOML text.
func planOfText(t testing.TB, text, name string) *partition.Plan {
	t.Helper()
	cfg, err := configs.Parse(strings.NewReader(text), name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A summary run (Refine's, which keeps no timeline) writes stages as the
// whole estimate does and keeps the same numbers as one that simulates
// every stage.
func TestAlikeStagesSummary(t *testing.T) {
	p := stagesPlan(t, 64, 2, 64, 2, 2, nil)
	full, err := EstimatePlan(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if full.Timeline.stagesWritten == 0 {
		t.Fatalf("no stage written in the whole estimate")
	}
	got, err := EstimatePlan(p, Options{summary: true})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := EstimatePlan(p, Options{summary: true, noStageWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ref) {
		t.Errorf("the summary differs from the one with every stage simulated:\n%+v\n%+v", got, ref)
	}
	if got.Decode.TPOTS != full.Decode.TPOTS || got.Prefill.TTFTS != full.Prefill.TTFTS {
		t.Errorf("summary TTFT %g, TPOT %g; whole estimate %g, %g", got.Prefill.TTFTS, got.Decode.TPOTS, full.Prefill.TTFTS, full.Decode.TPOTS)
	}
}

// opsAlike compares every field of partition.Op but the name, the layer,
// the peer and the group: changing any other field makes two ops unlike,
// changing one of those four does not.
func TestOpsAlikeComparesEveryField(t *testing.T) {
	base := partition.Op{Kind: partition.Gemm, Name: "l0.q", Layer: 3, Tensor: "wq", Rows: 4, N: 8, K: 8, Group: []int{0, 1}, Peer: 2, Bytes: 64, Eps: 1e-5}
	skip := map[string]bool{"Name": true, "Layer": true, "Peer": true, "Group": true}
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		b := base
		v := reflect.ValueOf(&b).Elem().Field(i)
		switch v.Kind() {
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Uint8:
			v.SetUint(v.Uint() + 1)
		case reflect.Float64:
			v.SetFloat(v.Float() + 1)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Slice:
			v.Set(reflect.ValueOf([]int{0, 2}))
		default:
			t.Fatalf("field %s of kind %s: the test does not know how to change it", f.Name, v.Kind())
		}
		if got, want := opsAlike(&base, &b), skip[f.Name]; got != want {
			t.Errorf("opsAlike with %s changed = %v, want %v", f.Name, got, want)
		}
	}
}

// BenchmarkAlikeStages is one full estimate (three timeline runs) of a
// built 100,000-GPU plan and of the 256-stage TP 1 pipeline, with its alike
// stages written and, as the reference, simulated (noStageWrites): the
// ratio of the two in one binary (docs/measurements/speed.md).
func BenchmarkAlikeStages(b *testing.B) {
	for _, c := range []struct {
		name string
		plan *partition.Plan
	}{
		{"gpus=100000", largePlan(b)},
		{"pp256", stagesPlan(b, 256, 1, 256, 1, 1, nil)},
	} {
		p := c.plan
		for _, simulated := range []bool{false, true} {
			name := c.name + "/written"
			if simulated {
				name = c.name + "/simulated"
			}
			b.Run(name, func(b *testing.B) {
				cpu := cpuTime(b)
				for i := 0; i < b.N; i++ {
					if _, err := EstimatePlan(p, Options{noStageWrites: simulated}); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// Messages a written stage left pending go on their channel before any the
// simulation sends on it after them (stageWriter.sending), in order, and
// stay pending for a send on another channel.
func TestAlikeStagesPendingGoFirst(t *testing.T) {
	in, other := chanKey{2, 3}, chanKey{3, 4}
	s := &simulator{inbox: map[chanKey][]message{in: {{1, 7}}}}
	w := &stageWriter{pend: []message{{2, 8}, {3, 9}}, pendKey: in}
	w.sending(s, other)
	if len(w.pend) != 2 || len(s.inbox[in]) != 1 {
		t.Errorf("a send on another channel moved the pending messages: pending %v, channel %v", w.pend, s.inbox[in])
	}
	w.sending(s, in)
	if want := []message{{1, 7}, {2, 8}, {3, 9}}; len(w.pend) != 0 || !reflect.DeepEqual(s.inbox[in], want) {
		t.Errorf("after a send on their channel: pending %v, channel %v; want none and %v", w.pend, s.inbox[in], want)
	}
	var none *stageWriter
	none.sending(s, in) // no writer: nothing to do
}
