package exec

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/stats"
)

// LinkProbeCalls is how many calls `partbench run` times of each group's
// collective after the measured iterations (RunOptions.LinkProbeCalls).
const LinkProbeCalls = 64

// LinkProbe is one group's collective timed back to back after a run's
// measured iterations, on the run's own communicator: the state the link
// was in at the end of the run, beside the calibration's back-to-back time
// and the run's in-place calls. On a shared host the link between two
// bound ranks can sit in a slower state for minutes (the project's 2-core
// VM: a 1 KiB all_reduce 0.6–0.7 µs in one state, 2.0–2.4 µs in the other;
// docs/measurements/cpu-calibration.md), and a run met in the slower one
// says so here rather than as a miss of the model.
type LinkProbe struct {
	// Kind is the collective (all_reduce or all_gather), Ranks its group,
	// Bytes its payload (an all_gather's: the gathered output): those of
	// the group's first collective in the rank's decode Program.
	Kind  string `json:"kind"`
	Ranks []int  `json:"ranks"`
	Bytes int64  `json:"bytes"`
	// Calls were timed (one more before them, untimed), each on the host
	// clock from its start to its return and, on a device, the queue's
	// sync after it; MedianS and MinS are the median and least call.
	Calls   int     `json:"calls"`
	MedianS float64 `json:"median_s"`
	MinS    float64 `json:"min_s"`
}

// probeLinks times, for every collective kind of every group of more than
// one rank in prog (a rank's decode Program), the group's first call of
// the kind calls times back to back, in the order of those first calls in
// prog: the same calls in the same order on every member, as the
// Program's own, so the probes cannot deadlock.
func probeLinks(ctx context.Context, prog partition.Program, c Compute, comm Comm, groups map[string]Group, calls int) ([]LinkProbe, error) {
	if calls < 1 {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []LinkProbe
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if op.Kind != partition.AllReduce && op.Kind != partition.AllGather {
			continue
		}
		k := GroupKey(op.Group)
		if len(op.Group) < 2 || seen[string(op.Kind)+" "+k] {
			continue
		}
		seen[string(op.Kind)+" "+k] = true
		times := make([]float64, 0, calls)
		for j := 0; j <= calls; j++ {
			t0 := time.Now()
			err := runOp(ctx, op, c, comm, groups, nil)
			if err == nil {
				err = c.Sync(ctx)
			}
			if err != nil {
				return nil, fmt.Errorf("link probe: %s over ranks %s: %w", op.Kind, k, err)
			}
			if j > 0 {
				times = append(times, time.Since(t0).Seconds())
			}
		}
		out = append(out, LinkProbe{Kind: string(op.Kind), Ranks: slices.Clone(op.Group), Bytes: op.Bytes,
			Calls: calls, MedianS: stats.Median(times), MinS: slices.Min(times)})
	}
	return out, nil
}
