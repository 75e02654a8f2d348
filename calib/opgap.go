package calib

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// opGapConfig is the config whose decode Program is run for the op gap:
// one rank of the tiny model, nothing but compute ops.
const opGapConfig = "test/single-tiny"

// measureOpGap times the executor's own time between two ops: rank 0's
// decode Program of opGapConfig run through pexec.RunProgramObserved on
// the CPU backend, with an observer that keeps each op's time by kind and
// iteration as a run's measured iterations do, passes after passes for at
// least minDur per repeat. Per repeat: (the passes' wall time − the
// observed ops' time) / the ops run, in seconds — the time a run spends
// between its op timers, which the op timers (and the op table timed as
// they are) do not hold.
func measureOpGap(ctx context.Context, repeats int, minDur time.Duration) ([]float64, error) {
	plan, c, err := cpuRankZero(opGapConfig)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	prog := plan.Program(0, partition.Decode)
	for i := range prog.Ops {
		if _, comm := prog.Ops[i].Kind.Comm(); comm {
			return nil, fmt.Errorf("op gap: %s rank 0's decode Program has a %s op (want compute only)", opGapConfig, prog.Ops[i].Kind)
		}
	}
	past := pexec.Past(plan, partition.Decode, 0)
	obs := newRunObserver() // cudastep.go: a run's bookkeeping of each op's time
	pass := func() error {
		obs.next()
		return pexec.RunProgramObserved(ctx, prog, c, nil, nil, past, obs.observe)
	}
	if err := pass(); err != nil { // warm-up
		return nil, fmt.Errorf("op gap: %w", err)
	}
	out := make([]float64, repeats)
	for r := range out {
		obs.observed = 0
		passes := 0
		start := time.Now()
		for passes == 0 || time.Since(start) < minDur {
			if err := pass(); err != nil {
				return nil, fmt.Errorf("op gap: %w", err)
			}
			passes++
		}
		wall := time.Since(start).Seconds()
		out[r] = opGapPerOp(wall, obs.observed, passes*len(prog.Ops))
	}
	return out, nil
}

// opGapPerOp is the time per op outside the op timers: (wall − observed)
// over ops, 0 when the timers hold it all (or there were no ops).
func opGapPerOp(wall, observed float64, ops int) float64 {
	if ops <= 0 {
		return 0
	}
	return math.Max(0, wall-observed) / float64(ops)
}

// opGapEntry is the op-time entry of the op gap from its repeats: their
// median, at least noWaitS (a gap too small to read is kept, 1 ns, so that
// the profile says it was measured); ok is false without repeats.
func opGapEntry(gaps []float64) (configs.OpTime, bool) {
	if len(gaps) == 0 {
		return configs.OpTime{}, false
	}
	sp := spreadOf(gaps)
	sp.Min, sp.Median, sp.Max = max(sp.Min, noWaitS), max(sp.Median, noWaitS), max(sp.Max, noWaitS)
	return configs.OpTime{Kind: configs.OpGapKind, Shape: configs.OpGapShape, Size: 1,
		TimeS: sp.Median, TimeMinS: sp.Min, TimeMaxS: sp.Max, Samples: len(gaps), Ranks: 1}, true
}
