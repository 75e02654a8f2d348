package calib

import (
	"context"
	"fmt"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// stepIterations is how many times measureStepOverhead runs the whole
// request (after one warm-up), as a run's measured iterations.
const stepIterations = 3

// measureStepOverhead runs plan's one rank as exec.Run runs it — the
// prefill Program, then every decode step, each pass followed by Sync —
// through c (a GPU Compute with decode graphs, as a run makes it), one
// warm-up and iterations measured iterations. Each decode step's wall time
// (between the returns of the Syncs around it, on now) less the device
// time of its ops in table (at the step's cache length) and less graphS
// (the graph launch sim charges a decode step) is the host's share of the
// step: what the executor spends between steps besides its ops. It returns
// the median over each iteration's steps, one per iteration, and how many
// of a step's ops the table lacks (an op whose device time read 0: it
// counts 0 here, as sim prices it by the roofline).
func measureStepOverhead(ctx context.Context, plan *partition.Plan, c pexec.Compute, table *sim.OpTable, graphS float64, iterations int, now func() time.Duration) (over []float64, missing int, err error) {
	if len(plan.Ranks) != 1 {
		return nil, 0, fmt.Errorf("step overhead: %s has %d ranks, want one", plan.Config.Name, len(plan.Ranks))
	}
	prefill, decode := plan.Program(0, partition.Prefill), plan.Program(0, partition.Decode)
	steps := plan.Config.Workload.OutputTokens - 1
	// The device time of each decode step's ops, from the table.
	opsS := make([]float64, steps)
	for s := range opsS {
		past := pexec.Past(plan, partition.Decode, s)
		for i := range decode.Ops {
			o := decode.Ops[i]
			if _, comm := o.Kind.Comm(); comm || o.Kind == partition.Send || o.Kind == partition.Recv {
				continue
			}
			o.Past = past(&o)
			t, ok := table.Time(&o)
			if !ok && s == 0 {
				missing++
			}
			opsS[s] += t
		}
	}
	pass := func(prog partition.Program, past func(*partition.Op) int) error {
		for i := range prog.Ops {
			op := &prog.Ops[i]
			if err := c.Exec(ctx, op, past(op)); err != nil {
				return fmt.Errorf("step overhead: %s %s: %w", prog.Phase, op.Name, err)
			}
		}
		return c.Sync(ctx)
	}
	for it := 0; it <= iterations; it++ { // iteration 0 warms up (and captures the graphs)
		if err := pass(prefill, pexec.Past(plan, partition.Prefill, 0)); err != nil {
			return nil, 0, err
		}
		last := now()
		stepOver := make([]float64, steps)
		for s := range steps {
			if err := pass(decode, pexec.Past(plan, partition.Decode, s)); err != nil {
				return nil, 0, err
			}
			t := now()
			stepOver[s] = (t - last).Seconds() - opsS[s] - graphS
			last = t
		}
		if it > 0 && steps > 0 {
			over = append(over, medianOf(stepOver))
		}
	}
	return over, missing, nil
}
