package sim

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

type chunkCase struct {
	label string
	plan  *partition.Plan
	opts  Options
}

// chunkCases are configs with a chunked prefill of 16 chunks and more: the
// re-runs of the 4,096-GPU search (its ten best candidates, as Refine
// plans them for `partbench search`: no range ends, 12 decode steps) that
// chunk their prefill 16 times or more (those of 8 chunks are still
// filling their 16- and 32-stage pipelines when a window could end, and
// are simulated chunk by chunk), but for the layer maps with one lighter
// end (first-1, last-1: ends-1 has both; left out for the test's time),
// and the search's synthetic dense
// model cut to 8 layers and batch 64 with a prefill chunk of 8 tokens (480 chunks of
// its 3,840-token prompt): TP 8 × PP 4 with 4 micro-batches and the GPU's
// range ends (the headline runs), the same with an uneven layer map (1, 1,
// 3, 3 layers: recvs that wait), and TP 2 × PP 4 with every rank simulated
// (collectives of two simulated members).
func chunkCases(t *testing.T) []chunkCase {
	t.Helper()
	var out []chunkCase
	spec := syntheticSpec(t, 4096)
	r, err := Search(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Quick == nil {
			continue
		}
		if n++; n > 10 {
			break
		}
		if row.PrefillChunks < 16 || row.Variant == VariantFirst || row.Variant == VariantLast {
			continue
		}
		p, err := partition.NewPlan(spec.CandidateConfig(row.Candidate))
		if err != nil {
			t.Fatal(err)
		}
		p.System.GPU.Ranges = topology.ParamRanges{}
		out = append(out, chunkCase{fmt.Sprintf("4,096-GPU search: %s (%d chunks)", row.Name(), row.PrefillChunks), p, Options{DecodeSteps: SearchDecodeSteps}})
	}
	small := func(tp, pp int, layerMap []int, o Options) {
		p := syntheticChunked(t, tp, pp, layerMap)
		out = append(out, chunkCase{fmt.Sprintf("synthetic 8 layers, tp %d pp %d, layer map %v, every rank %v (%d chunks)", tp, pp, layerMap, o.EveryRank, p.PrefillChunks), p, o})
	}
	small(8, 4, nil, Options{})
	small(8, 4, []int{0, 1, 2, 2, 2, 3, 3, 3}, Options{})
	small(2, 4, nil, Options{EveryRank: true})
	return out
}

// syntheticChunked is the search's synthetic model cut to 8 layers and
// batch 64 at TP tp × PP pp with 4 micro-batches and a prefill chunk of 8
// tokens: 480 chunks of its 3,840-token prompt.
func syntheticChunked(t *testing.T, tp, pp int, layerMap []int) *partition.Plan {
	t.Helper()
	spec, err := SyntheticSearchSpec(tp * pp)
	if err != nil {
		t.Fatal(err)
	}
	c := spec.CandidateConfig(Candidate{TP: tp, PP: pp, DP: 1, Microbatches: 4, Variant: VariantEven})
	c.Model.Layers, c.Workload.Batch = 8, 64
	c.Parallel.LayerMap = layerMap
	c.Parallel.PrefillChunk = 8
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The estimate with the prefill's middle chunks written from the steady
// state equals the estimate that simulates every chunk and decode step
// (Options.stepwise) within steadyRelTol, number for number, and so do its
// timeline's slices (the same ops in order, times within the tolerance,
// sends and recvs paired alike). Every config must have chunks written
// (else the test compares the reference with itself), the 480-chunk ones
// most of them.
func TestChunkedPrefillMatchesStepwise(t *testing.T) {
	if testing.Short() {
		t.Skip("estimates the search's re-runs twice")
	}
	cases := chunkCases(t)
	if len(cases) < 6 {
		t.Fatalf("%d configs, want at least 6 (3 search re-runs)", len(cases))
	}
	start := time.Now()
	worst, worstAt := 0.0, ""
	for _, c := range cases {
		ref := c.opts
		ref.stepwise = true
		want, err := EstimatePlan(c.plan, ref)
		var tooLarge *TooLargeError
		if errors.As(err, &tooLarge) { // Refine skips it too
			t.Logf("%s: %v", c.label, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.label, err)
		}
		got, err := EstimatePlan(c.plan, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.label, err)
		}
		w, k := got.Timeline.chunksWritten, c.plan.PrefillChunks
		t.Logf("%s: %d of %d chunks written (%.1f s)", c.label, w, k, time.Since(start).Seconds())
		if want.Timeline.chunksWritten != 0 {
			t.Errorf("%s: the stepwise reference wrote %d chunks", c.label, want.Timeline.chunksWritten)
		}
		if w == 0 || k >= 480 && w < k*3/4 {
			t.Errorf("%s: %d of %d chunks written", c.label, w, k)
		}
		tieCriticalRanks(t, c.label, got, want)
		d, at := steadyCompareEstimates(t, c.label, got, want)
		if d > worst {
			worst, worstAt = d, c.label+": "+at
		}
		steadyCompareTimelines(t, c.label, got.Timeline, want.Timeline)
	}
	t.Logf("largest relative difference %.3g (%s)", worst, worstAt)
}

// A margin's quadratic stays positive for as many chunks as brute force
// finds: rising, falling to 0 after 7 chunks (q(m) = 8 − m), falling to 0
// and rising again (a vertex at m = 4: q(m) = (m − 4)² − 1 crosses 0 at
// m = 3), and one that never reaches it within max.
func TestChunkMarginPositiveFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(m float64) float64
		want int
	}{
		{"rising", func(m float64) float64 { return 1 + m*m }, 20},
		{"falling, 0 at m = 8", func(m float64) float64 { return 8 - m }, 7},
		{"through 0 at m = 3 and 5", func(m float64) float64 { return (m-4)*(m-4) - 1 }, 2},
		{"concave, 0 at m = 10.5", func(m float64) float64 { return 110.25 - m*m }, 10},
		{"a vertex above 0", func(m float64) float64 { return (m-4)*(m-4) + 0.5 }, 20},
	} {
		q := quadOf(tc.f(-3), tc.f(-2), tc.f(-1), tc.f(0))
		if got := q.positiveFor(0, 20); got != tc.want {
			t.Errorf("%s: positive for %d chunks, want %d", tc.name, got, tc.want)
		}
		// Brute force over the same quadratic.
		bf := 0
		for m := 1; m <= 20 && q.at(m) > 0; m++ {
			bf = m
		}
		if bf != tc.want {
			t.Errorf("%s: brute force %d, want %d", tc.name, bf, tc.want)
		}
		if math.Abs(q.at(5)-tc.f(5)) > 1e-9 {
			t.Errorf("%s: q(5) = %g, want %g", tc.name, q.at(5), tc.f(5))
		}
	}
}

// tieCriticalRanks gives got each phase's critical rank of want where the
// two are busy alike within steadyRelTol in want: the critical rank is the
// busiest, and ranks of stages alike (the same layers and links) are busy
// alike but for rounding, which then picks one of them.
func tieCriticalRanks(t *testing.T, label string, got, want *Estimate) {
	t.Helper()
	for _, ph := range []struct {
		name      string
		got, want *PhaseEstimate
		busy      func(r RankEstimate) float64
	}{
		{"prefill", &got.Prefill, &want.Prefill, func(r RankEstimate) float64 { return r.PrefillBusyS }},
		{"decode", &got.Decode, &want.Decode, func(r RankEstimate) float64 { return r.DecodeBusyS }},
	} {
		g, w := ph.got.CriticalRank, ph.want.CriticalRank
		if g == w || g < 0 || g >= want.Ranks.Len() {
			continue
		}
		if d := relDiff(ph.busy(rankRow(t, want, g)), ph.busy(rankRow(t, want, w))); d <= steadyRelTol {
			t.Logf("%s: %s critical rank %d, stepwise %d: busy alike within %.3g", label, ph.name, g, w, d)
			ph.got.CriticalRank = w
		}
	}
}

// The first-touch set answers as a map of (layer, tensor) does, over every
// op of three plans' prefill and decode Programs (tp8pp2's rank 8, whose
// layers start at 8, and the tiny pipeline's first and last stages) and
// keys outside its layer range.
func TestTouchedIsAMapOfKeys(t *testing.T) {
	var ops []partition.Op
	for _, c := range []struct {
		name string
		rank int
	}{{"tp8pp2", 8}, {"test/tp2pp2-tiny", 0}, {"test/tp2pp2-tiny", 3}} {
		p := planEdited(t, c.name, nil)
		ops = append(ops, p.Program(c.rank, partition.Prefill).Ops...)
		ops = append(ops, p.Program(c.rank, partition.Decode).Ops...)
	}
	// Beyond a plan's layers: below the first layer seen (the map), far
	// above it, and the empty tensor name.
	ops = append(ops, partition.Op{Layer: -2, Tensor: "x"}, partition.Op{Layer: -2, Tensor: "x"}, partition.Op{Layer: 1 << 21}, partition.Op{Layer: 1 << 21},
		partition.Op{Layer: 7, Tensor: ""}, partition.Op{Layer: 0, Tensor: "wq"}, partition.Op{Layer: 0, Tensor: "wq"})
	var set touched
	seen := map[tensorKey]bool{}
	news := 0
	for i := range ops {
		k := tensorKey{ops[i].Layer, ops[i].Tensor}
		want := !seen[k]
		seen[k] = true
		if got := set.add(k.layer, k.tensor); got != want {
			t.Fatalf("op %d (%+v): new %v, want %v", i, k, got, want)
		}
		if want {
			news++
		}
	}
	if news < 10 || news == len(ops) {
		t.Errorf("%d of %d keys new: the ops do not exercise the set", news, len(ops))
	}
}

// A window is written from only as far as it follows one quadratic and
// every maximum keeps its side: a fake rank whose chunks are a GEMM and a
// recv, 20 chunks, window 1–4. A recv that waits longer each chunk (its
// message the later side) lets all 14 middle chunks after the window be
// written; one whose wait falls by 0.1 s a chunk from 0.5 s at chunk 4
// reaches 0 at chunk 9, so 4 are; one that waited in two chunks of the
// window only, none; second differences that disagree by 1e-9 of the
// clock (the rounding budget allows 1e-11 of it over the chunks written),
// none; a message left in flight at the window's end, none.
func TestChunkWindowRefusesWhatDoesNotFollow(t *testing.T) {
	plan := planEdited(t, "test/tp2pp2-tiny", nil)
	const k = 20
	var pre []partition.Op
	for c := 0; c < k; c++ {
		pre = append(pre, partition.Op{Kind: partition.Gemm, Chunk: c}, partition.Op{Kind: partition.Recv, Peer: 1, Chunk: c})
	}
	build := func(wait func(c float64) float64, bump float64, inFlight bool) (*simulator, *chunkSteady) {
		s := &simulator{plan: plan, ids: []int{0}, inbox: map[chanKey][]message{}, groups: map[groupKey]*groupInfo{}}
		s.ranks = []*rankState{{pre: pre}}
		if inFlight {
			s.inbox[chanKey{1, 0}] = []message{{arrival: 1}}
		}
		cs := &chunkSteady{chunks: k, n: []int{2}, base: []int{0}, from: 1, limit: 5}
		for w := range cs.rec {
			cs.rec[w] = make([]chunkRec, 2)
		}
		for c := 1; c <= 4; c++ {
			f := float64(c)
			gemmEnd := 10 + 2*f + 0.01*f*f
			w := wait(f)
			end := gemmEnd + w
			if c == 4 {
				end += bump * end
			}
			cs.rec[c%chunkWindow][0] = chunkRec{end: gemmEnd}
			// The recv ends at its message's arrival where it waits (b = 0),
			// at its clock where it does not (a = 0, the message earlier).
			arr := end
			if w == 0 {
				arr = end - 0.3
			}
			cs.rec[c%chunkWindow][1] = chunkRec{end: end, wait: w, a: w, b: end - arr, arr: arr}
		}
		return s, cs
	}
	for _, tc := range []struct {
		name     string
		wait     func(c float64) float64
		bump     float64
		inFlight bool
		want     int
	}{
		{"wait rising", func(c float64) float64 { return 0.5 + 0.01*c }, 0, false, 14},
		{"wait falling to 0 at chunk 9", func(c float64) float64 { return 0.5 - 0.1*(c-4) }, 0, false, 4},
		{"waits in two chunks of four", func(c float64) float64 { return max(0, c-2) }, 0, false, 0},
		{"second differences disagree", func(c float64) float64 { return 0.5 }, 1e-9, false, 0},
		{"a message in flight", func(c float64) float64 { return 0.5 }, 0, true, 0},
	} {
		s, cs := build(tc.wait, tc.bump, tc.inFlight)
		if got := cs.writable(s, 4); got != tc.want {
			t.Errorf("%s: %d chunks writable, want %d", tc.name, got, tc.want)
		}
	}
}

// prefillProgram builds what partition's Program builds, op for op
// (reflect.DeepEqual), on every rank of plans with 3 to 480 chunks: tp8pp2
// with chunks of 1,000 tokens (10, the last shorter), GPT-2 tiny's learned
// positions and biases at 5 tokens, its encoder at 6, the 480-chunk
// synthetic pipeline with uneven layers (syntheticChunked), and the
// 4,096-GPU search's 64-chunk re-run candidate (ends-1; on these two, the
// first ranks of the first, second and last stages, and rank 1); one
// chunk, where it builds with Program.
func TestPrefillProgramIsPlanProgram(t *testing.T) {
	var plans []*partition.Plan
	for _, e := range []struct {
		name  string
		chunk int
		enc   bool
	}{{"tp8pp2", 1000, false}, {"test/gpt2-tiny", 5, false}, {"test/gpt2-tiny", 6, true}, {"tp8pp2", 0, false}} {
		plans = append(plans, planEdited(t, e.name, func(c *configs.Config) {
			c.Parallel.PrefillChunk = e.chunk
			if e.enc {
				c.Model.Encoder, c.Workload.Phases = true, []string{"prefill"}
			}
		}))
	}
	plans = append(plans, syntheticChunked(t, 8, 4, []int{0, 1, 2, 2, 2, 3, 3, 3}))
	spec := syntheticSpec(t, 4096)
	big, err := partition.NewPlan(spec.CandidateConfig(Candidate{TP: 128, PP: 16, DP: 2, Microbatches: 8, Variant: VariantEnds,
		StageLayers: append(append([]int{7}, evenSplit(128-14, 14)...), 7)}))
	if err != nil {
		t.Fatal(err)
	}
	plans = append(plans, big)
	for _, p := range plans {
		var ranks []int // every rank of small plans, else the first, second and last stages' first ranks and rank 1
		if p.Size() <= 16 {
			for r := range p.Ranks {
				ranks = append(ranks, r)
			}
		} else {
			ranks = []int{p.RankOf(0, 0), 1, p.RankOf(1, 0), p.RankOf(p.PP-1, 0)}
		}
		for _, r := range ranks {
			got, want := prefillProgram(p, r), p.Program(r, partition.Prefill)
			if !reflect.DeepEqual(got, want) {
				for i := range want.Ops {
					if i >= len(got.Ops) || !reflect.DeepEqual(got.Ops[i], want.Ops[i]) {
						t.Fatalf("%s (%d chunks) rank %d: op %d differs (%d ops, want %d)", p.Config.Name, p.PrefillChunks, r, i, len(got.Ops), len(want.Ops))
					}
				}
				t.Fatalf("%s rank %d: programs differ", p.Config.Name, r)
			}
		}
		t.Logf("%s: %d chunks, %d ranks compared", p.Config.Name, p.PrefillChunks, len(ranks))
	}
}
