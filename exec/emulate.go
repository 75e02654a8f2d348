package exec

import (
	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/stats"
)

// Emulation is what one device measured while playing every rank in turn.
type Emulation struct {
	// Ops are the median compute-op times over the measured iterations
	// (communication ops are −1: they stay modeled).
	Ops OpTimes
	// AllocatedBytes is each rank's memory as the backend allocated it.
	AllocatedBytes []int64
}

// OpTimes are per-op times in seconds, indexed [rank][op index in the
// rank's Program of that phase]; −1 marks an op that was not measured.
type OpTimes struct {
	Prefill, Decode [][]float64
}

// Emulate runs every rank's Programs in turn on one device with its real
// shapes and memory footprint, moving no data between ranks (a received
// buffer keeps whatever it held), and measures each compute op. The
// timeline of the whole system then comes from sim with these times and
// modeled communication (package compare assembles it).
func Emulate(ctx context.Context, plan *partition.Plan, newCompute func(*partition.Plan, int) (Compute, error), warmup, iterations int) (*Emulation, error) {
	if iterations < 1 {
		return nil, fmt.Errorf("emulate: iterations must be at least 1 (got %d)", iterations)
	}
	em := &Emulation{}
	steps := plan.Config.Workload.OutputTokens - 1
	for r := range plan.Ranks {
		c, err := newCompute(plan, r)
		if err != nil {
			return nil, fmt.Errorf("emulate rank %d: %w", r, err)
		}
		pre, dec := plan.Program(r, partition.Prefill), plan.Program(r, partition.Decode)
		preT, decT := samples(len(pre.Ops)), samples(len(dec.Ops))
		for it := 0; it < warmup+iterations; it++ {
			keep := it >= warmup
			if err := timeProgram(ctx, pre, c, plan, partition.Prefill, 0, preT, keep); err != nil {
				return nil, err
			}
			for s := 0; s < steps; s++ {
				if err := timeProgram(ctx, dec, c, plan, partition.Decode, s, decT, keep); err != nil {
					return nil, err
				}
			}
		}
		em.Ops.Prefill = append(em.Ops.Prefill, medians(preT))
		em.Ops.Decode = append(em.Ops.Decode, medians(decT))
		em.AllocatedBytes = append(em.AllocatedBytes, c.AllocatedBytes())
		if err := c.Close(); err != nil {
			return nil, err
		}
	}
	return em, nil
}

func samples(n int) [][]float64 { return make([][]float64, n) }

// medians are the median of each op's samples (stats.Median, the one
// definition runs use for p50 too); −1 where there is none.
func medians(s [][]float64) []float64 {
	out := make([]float64, len(s))
	for i, xs := range s {
		if len(xs) == 0 {
			out[i] = -1
			continue
		}
		out[i] = stats.Median(xs)
	}
	return out
}

// timeProgram runs a Program's compute ops one by one, each timed to its
// completion (Sync); communication ops are skipped (they stay modeled).
func timeProgram(ctx context.Context, prog partition.Program, c Compute, plan *partition.Plan, phase partition.Phase, step int, into [][]float64, keep bool) error {
	past := Past(plan, phase, step)
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if _, isComm := op.Kind.Comm(); isComm {
			continue
		}
		start := time.Now()
		if err := c.Exec(ctx, op, past(op)); err != nil {
			return opErr(prog, op, err)
		}
		if err := c.Sync(ctx); err != nil {
			return opErr(prog, op, err)
		}
		if keep {
			into[i] = append(into[i], time.Since(start).Seconds())
		}
	}
	return nil
}
