package compare_test

import (
	"context"
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
