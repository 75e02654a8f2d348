package compare_test

import (
	"context"
	"strings"
	"testing"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

func TestEmulateMeasuresComputeAndLeavesCommunicationModeled(t *testing.T) {
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	em, err := pexec.Emulate(context.Background(), plan, func(p *partition.Plan, r int) (pexec.Compute, error) { return cpu.New(p, r) }, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(em.Ops.Prefill) != 4 || len(em.Ops.Decode) != 4 || len(em.AllocatedBytes) != 4 {
		t.Fatalf("ranks: %d %d %d", len(em.Ops.Prefill), len(em.Ops.Decode), len(em.AllocatedBytes))
	}
	for r := range plan.Ranks {
		for i, op := range plan.Program(r, partition.Decode).Ops {
			_, isComm := op.Kind.Comm()
			if got := em.Ops.Decode[r][i]; isComm != (got < 0) {
				t.Fatalf("rank %d op %s: time %g (communication must stay modeled, compute measured)", r, op.Name, got)
			}
		}
		if em.AllocatedBytes[r] <= 0 {
			t.Fatalf("rank %d allocated %d", r, em.AllocatedBytes[r])
		}
	}
	e, err := sim.EstimatePlan(plan, sim.Options{Measured: compare.MeasuredOps(em)})
	if err != nil {
		t.Fatal(err)
	}
	var measured, modeledComm int
	for _, sl := range e.Timeline.All() {
		_, isComm := sl.Op.Kind.Comm()
		switch {
		case sl.Bound == sim.BoundMeasured:
			measured++
			if isComm {
				t.Fatalf("communication %s marked measured", sl.Op.Name)
			}
		case isComm:
			modeledComm++
		default:
			t.Fatalf("compute op %s kept its modeled time (%s)", sl.Op.Name, sl.Bound)
		}
	}
	if measured == 0 || modeledComm == 0 {
		t.Fatalf("%d measured compute slices, %d modeled communication slices", measured, modeledComm)
	}
}

// A later pipeline stage whose host took at least 0.9 of its prefill's
// device time to queue it ran at the host's pace; the note names it.
// tp2pp2-tiny: ranks 0–1 stage 0, 2–3 stage 1. Rank 0's host-paced prefill
// is stage 0's (no receive before it: not named); rank 2 queued in 0.55 of
// 0.60 ms (≥ 0.54: named); rank 3 in 0.58 of 0.65 ms (< 0.585: not).
func TestHostPaceNote(t *testing.T) {
	plan, err := partition.LoadPlan("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	em := &pexec.Emulation{Clock: pexec.ClockDevice,
		Steps:     pexec.StepTimes{Prefill: []float64{1.0e-3, 1.0e-3, 0.60e-3, 0.65e-3}},
		HostQueue: pexec.StepTimes{Prefill: []float64{0.99e-3, 0.5e-3, 0.55e-3, 0.58e-3}}}
	e := &compare.Emulation{Measured: em}
	n := e.HostPaceNote(plan)
	for _, want := range []string{"rank(s) [2] ", "0.550 ms to queue it against 0.600 ms"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	em.Clock = pexec.ClockHost
	if n := e.HostPaceNote(plan); n != "" {
		t.Errorf("host clock: note %q, want none", n)
	}
	em.Clock = pexec.ClockDevice
	one, err := partition.LoadPlan("test/tp4-tiny")
	if err != nil {
		t.Fatal(err)
	}
	if n := e.HostPaceNote(one); n != "" {
		t.Errorf("one stage: note %q, want none", n)
	}
}
