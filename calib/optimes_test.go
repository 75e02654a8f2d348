package calib

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// Every compute op of single-tiny's Programs has an op-time entry after
// measuring (so sim prices none of them by roofline), and decode attention
// has one at every cache length a run's decode steps see.
func TestOpTimesCoverTheProgram(t *testing.T) {
	plans, err := opPlans([]string{"test/single-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := measureOpTimes(context.Background(), plans, 2, 1, nil, nil, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	tab, plan := opTableOnSingleTiny(t, ts)
	kinds := map[partition.Kind]bool{}
	for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
		for _, op := range plan.Program(0, ph).Ops {
			if _, ok := tab.Time(&op); !ok {
				t.Errorf("%s %s (%s): no entry", ph, op.Name, op.Kind)
			}
			kinds[op.Kind] = true
		}
	}
	// input, rmsnorm, gemm, attention, activation, residual, sample
	if len(kinds) != 7 {
		t.Errorf("kinds %v, want the 7 compute kinds of a Llama-style Program", kinds)
	}
	// Decode attention: prompt 20, 4 output tokens → steps at past 20, 21, 22
	// (contexts 21–23), and sim's representative past 20 + 4/2 = 22.
	var ctxs []int64
	for _, e := range ts {
		if e.Kind == "attention" && e.Size == 1 {
			ctxs = append(ctxs, e.Context)
		}
		if e.Ranks != 2 {
			t.Fatalf("entry %+v: ranks %d, want 2", e, e.Ranks)
		}
	}
	if len(ctxs) != 3 || ctxs[0] != 21 || ctxs[2] != 23 {
		t.Errorf("decode attention contexts %v, want [21 22 23]", ctxs)
	}
}

func TestCommOpTimes(t *testing.T) {
	got := commOpTimes([]configs.CommSample{
		{Op: opAllReduce, Ranks: 4, Bytes: 256, TimeMinS: 1, TimeMedianS: 2, TimeMaxS: 3},
		{Op: opSendRecv, Ranks: 2, Bytes: 16, TimeMinS: 1, TimeMedianS: 1, TimeMaxS: 1},
	}, 4, 5)
	want := []configs.OpTime{
		{Kind: "all_reduce", Shape: "ranks=4", Size: 256, TimeS: 2, TimeMinS: 1, TimeMaxS: 3, Samples: 5, Ranks: 4},
		{Kind: "send", Shape: "ranks=2", Size: 16, TimeS: 1, TimeMinS: 1, TimeMaxS: 1, Samples: 5, Ranks: 4},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The keys are sim's: an all_reduce of 256 B over 4 ranks, a send of 16 B.
	tab := sim.NewOpTable(got)
	if v, ok := tab.Time(&partition.Op{Kind: partition.AllReduce, Group: []int{0, 1, 2, 3}, Bytes: 256}); !ok || v != 2 {
		t.Errorf("all_reduce look-up: %g, %v", v, ok)
	}
	if v, ok := tab.Time(&partition.Op{Kind: partition.Send, Peer: 1, Bytes: 16}); !ok || v != 1 {
		t.Errorf("send look-up: %g, %v", v, ok)
	}
}

// fillReceived leaves no zero in a received activation buffer (a GEMM on
// zeros is timed too fast: gonum skips zero elements) and keeps token ids.
func TestFillReceived(t *testing.T) {
	plans, err := opPlans([]string{"test/tp2pp2-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	plan := plans[0]
	c, err := cpu.New(plan, 2) // stage 1: receives activations from stage 0
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prog := plan.Program(2, partition.Decode)
	if err := fillReceived(c, prog); err != nil {
		t.Fatal(err)
	}
	acts := 0
	for _, op := range prog.Ops {
		if op.Kind != partition.Recv {
			continue
		}
		b, err := c.Buffer(op.Out, op.Microbatch, op.Elems)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range b.(pexec.F32) {
			if op.Payload == partition.PayloadTokens && v != 0 {
				t.Fatalf("%s: token %d = %g, want id 0", op.Name, i, v)
			}
			if op.Payload == partition.PayloadActivation && (v == 0 || v <= -1 || v >= 1) {
				t.Fatalf("%s: element %d = %g, want a non-zero value in (−1, 1)", op.Name, i, v)
			}
		}
		if op.Payload == partition.PayloadActivation {
			acts++
		}
	}
	if acts == 0 {
		t.Fatal("stage 1 received no activations")
	}
}

// rowClock is the CPU backend with a device clock whose time advances by
// 1 ns per unit of each op's op-time size (sim.OpKey: rows, or query
// rows per sequence for attention): an op's time read from the marks is
// then its size in nanoseconds.
type rowClock struct {
	pexec.Compute
	now   float64
	marks []float64
}

func (r *rowClock) Exec(ctx context.Context, op *partition.Op, past int) error {
	_, _, size, _ := sim.OpKey(op)
	r.now += float64(size) * 1e-9
	return r.Compute.Exec(ctx, op, past)
}
func (r *rowClock) Mark() error { r.marks = append(r.marks, r.now); return nil }
func (r *rowClock) Marks() ([]float64, error) {
	out := make([]float64, len(r.marks))
	for i, m := range r.marks {
		out[i] = m - r.marks[0]
	}
	r.marks = nil
	return out, nil
}

// A Compute with a device clock is timed by its marks, not the host's
// clock, and held before every pass: the first time for 10 ms, then for
// twice the host time the pass took to queue.
func TestOpTimesOnADeviceClock(t *testing.T) {
	plans, err := opPlans([]string{"test/single-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	newCompute := func(p *partition.Plan, rank int) (pexec.Compute, error) {
		c, err := cpu.New(p, rank)
		return &rowClock{Compute: c}, err
	}
	var holds []time.Duration
	hold := func(c pexec.Compute, d time.Duration) error {
		if _, ok := c.(*rowClock); !ok {
			t.Errorf("held a %T", c)
		}
		holds = append(holds, d)
		return nil
	}
	ts, err := measureOpTimes(context.Background(), plans, 1, 2, newCompute, hold, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ts {
		if want := float64(e.Size) * 1e-9; math.Abs(e.TimeS-want) > 1e-15 {
			t.Errorf("%s %s size %d: %g s, want its size in ns, %g", e.Kind, e.Shape, e.Size, e.TimeS, want)
		}
	}
	// single-tiny: a prefill, 3 decode steps and the representative one:
	// 5 passes, 3 iterations (one warm-up).
	passes := len(passesOf(plans[0]))
	if passes != 5 || len(holds) != 3*passes {
		t.Fatalf("%d holds for %d passes, want 3 × 5", len(holds), passes)
	}
	for i, d := range holds {
		if first := i < passes; first != (d == 10*time.Millisecond) || d <= 0 {
			t.Errorf("hold %d: %v", i, d)
		}
	}
}

// opTableOnSingleTiny validates the measured op times ts (as a profile's
// op_time) and returns their table with the plan of test/single-tiny, whose
// ops the op-time tests look up in it.
func opTableOnSingleTiny(t *testing.T, ts []configs.OpTime) (*sim.OpTable, *partition.Plan) {
	t.Helper()
	if err := configs.ValidateOpTimes("op_time", ts); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sim.NewOpTable(ts), plan
}

// stageRanks stands each pipeline stage's first TP rank of the first
// replica for the rest: tp2pp2-tiny (TP 2, PP 2: ranks 0–1 stage 0, 2–3
// stage 1) → [0 2]; tp2-dp2-tiny (TP 2, one stage, 2 replicas) → [0];
// layerwise16-tiny (16 stages of one rank) → 0…15. Timed with them, the
// table prices every compute op of every rank, and only those ranks get a
// Compute.
func TestStageRanksStandForEveryRank(t *testing.T) {
	for _, c := range []struct {
		config string
		want   []int
	}{
		{"test/tp2pp2-tiny", []int{0, 2}},
		{"test/tp2-dp2-tiny", []int{0}},
		{"test/single-tiny", []int{0}},
		{"test/layerwise16-tiny", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
	} {
		plans, err := opPlans([]string{c.config})
		if err != nil {
			t.Fatal(err)
		}
		got := stageRanks(plans[0])
		if len(got) != len(c.want) {
			t.Fatalf("%s: stage ranks %v, want %v", c.config, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: stage ranks %v, want %v", c.config, got, c.want)
			}
		}
		if c.config != "test/tp2pp2-tiny" {
			continue
		}
		var made []int
		nc := func(plan *partition.Plan, rank int) (pexec.Compute, error) {
			made = append(made, rank)
			return CPUCompute(plan, rank)
		}
		steps := 0
		ts, err := measureOpTimesBlocks(context.Background(), plans, 1, 1, blockOpts{ranks: stageRanks}, nc, nil, func() error { steps++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(made) != 2 || made[0] != 0 || made[1] != 2 || steps != 2 {
			t.Errorf("Computes made for ranks %v in %d steps, want [0 2] in 2", made, steps)
		}
		for _, m := range unpricedOps(plans[0], sim.NewOpTable(ts)) {
			t.Errorf("%s: no entry", m)
		}
	}
}

// unpricedOps names every compute op of every rank of plan, both phases,
// that table has no time for.
func unpricedOps(plan *partition.Plan, table *sim.OpTable) []string {
	var out []string
	for r := range plan.Ranks {
		for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
			for _, op := range plan.Program(r, ph).Ops {
				if _, comm := op.Kind.Comm(); comm {
					continue
				}
				if _, ok := table.Time(&op); !ok {
					out = append(out, fmt.Sprintf("rank %d %s %s (%s)", r, ph, op.Name, op.Kind))
				}
			}
		}
	}
	return out
}
