package calib

import (
	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/partition"
)

// overheadConfig is the config whose smallest op is timed for the per-op
// overhead: one rank of the tiny model.
const overheadConfig = "test/single-tiny"

// execOverhead times the smallest compute op there is through the CPU
// backend's Compute.Exec (from the registry): a residual add of one decode row of the tiny model (64
// float32 additions, tens of nanoseconds of arithmetic). What it measures
// is the call's fixed cost: op dispatch, buffer look-ups and bounds checks.
// Seconds per call, once per repeat.
func execOverhead(ctx context.Context, repeats int, minDur time.Duration) ([]float64, error) {
	plan, c, err := cpuRankZero(overheadConfig)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var op *partition.Op
	prog := plan.Program(0, partition.Decode)
	for i := range prog.Ops {
		if prog.Ops[i].Kind == partition.Residual {
			op = &prog.Ops[i]
			break
		}
	}
	if op == nil {
		return nil, fmt.Errorf("per-op overhead: %s has no residual op", overheadConfig)
	}
	ts := make([]float64, repeats)
	for r := range ts {
		var execErr error
		ts[r] = timePer(minDur, func() {
			if err := c.Exec(ctx, op, op.Past); err != nil && execErr == nil {
				execErr = err
			}
		})
		if execErr != nil {
			return nil, fmt.Errorf("per-op overhead: %w", execErr)
		}
	}
	return ts, nil
}
