package compare

import (
	"context"
	"fmt"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// MeasuredOps are an emulation's compute-op times as sim replays them in
// the timeline (communication ops, −1, stay modeled).
func MeasuredOps(em *exec.Emulation) *sim.MeasuredOps {
	return &sim.MeasuredOps{Prefill: em.Ops.Prefill, Decode: em.Ops.Decode}
}

// Emulation is the timeline of the whole system rebuilt from one device's
// measured compute and modeled communication, beside the pure model of the
// same Plan.
type Emulation struct {
	Emulated, Modeled *sim.Estimate
	// AllocatedBytes is each rank's memory as the backend allocated it.
	AllocatedBytes []int64
	// Measured is what the device measured (op and step times, clock).
	Measured *exec.Emulation
}

// Emulate prices the communication of plan with the collective model and
// assembles the emulated timeline from em's measured compute.
func Emulate(plan *partition.Plan, em *exec.Emulation, collectives sim.CollectiveOptions) (*Emulation, error) {
	opts := sim.Options{Collectives: collectives}
	model, err := sim.EstimatePlan(plan, opts)
	if err != nil {
		return nil, err
	}
	opts.Measured = MeasuredOps(em)
	emu, err := sim.EstimatePlan(plan, opts)
	if err != nil {
		return nil, err
	}
	return &Emulation{Emulated: emu, Modeled: model, AllocatedBytes: em.AllocatedBytes, Measured: em}, nil
}

// EmulateRun plays every rank of plan in turn on one device
// (exec.Emulate, the config's warm-up and measured iterations) and holds
// the rebuilt timeline against the model (Emulate); ranks is the count the
// user asked for, which must be the plan's.
func EmulateRun(ctx context.Context, plan *partition.Plan, ranks int, newCompute func(*partition.Plan, int) (exec.Compute, error), collectives sim.CollectiveOptions) (*Emulation, error) {
	if ranks != plan.Size() {
		return nil, fmt.Errorf("--emulate-ranks: %s needs %s = %d ranks (got %d)", plan.Config.Name, plan.Factors(), plan.Size(), ranks)
	}
	em, err := exec.Emulate(ctx, plan, newCompute, plan.Config.Run.Warmup, plan.Config.Run.Iterations)
	if err != nil {
		return nil, err
	}
	return Emulate(plan, em, collectives)
}
