package compare

import (
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
	return &Emulation{Emulated: emu, Modeled: model, AllocatedBytes: em.AllocatedBytes}, nil
}
