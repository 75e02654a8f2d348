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

// hostPacedShare is how close to a step's device time (between its marks)
// the host's time to queue it must come for the step to count as run at
// the host's pace.
const hostPacedShare = 0.9

// HostPaceNote says, for a pipeline emulated on a device clock, which
// later stages' prefills ran at their host's pace: the host took at least
// hostPacedShare of the step's device time to queue it. The emulation
// plays each rank from its step's start, alone, so such a stage's ops wait
// for its host; in a run its host queues them while its receive waits
// (a receive is queued on the stream like its compute), and they run at
// the device's pace once the activations arrive — so the emulated TTFT is
// high by up to those prefills' host-paced share. "" where no such stage
// ran so (one stage, a host clock, ops longer than their queueing).
func (e *Emulation) HostPaceNote(plan *partition.Plan) string {
	em := e.Measured
	if em == nil || em.Clock != exec.ClockDevice || plan.PP < 2 || len(em.HostQueue.Prefill) != len(em.Steps.Prefill) {
		return ""
	}
	var ranks []int
	var queued, device float64 // the slowest such rank's
	for r, q := range em.HostQueue.Prefill {
		d := em.Steps.Prefill[r]
		if plan.RankAt(r).Stage == 0 || !(d > 0) || q < hostPacedShare*d {
			continue
		}
		ranks = append(ranks, r)
		if d > device {
			queued, device = q, d
		}
	}
	if len(ranks) == 0 {
		return ""
	}
	return fmt.Sprintf("the prefill of rank(s) %v (pipeline stages after the first) ran at the host's pace: the host took %.3f ms to queue it against %.3f ms on the device between its marks (slowest); "+
		"the emulation plays each rank alone from its step's start, while in a run a stage's host queues its ops as its receive waits and they run at the device's pace once the activations arrive, so the emulated TTFT is an upper bound here",
		ranks, queued*1e3, device*1e3)
}
