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
	// clock from its start to its return; MedianS and MinS are the median
	// and least call. Batched (a device's queued collectives): the calls
	// were queued back to back and synced once, MedianS and MinS both the
	// batch's time over Calls.
	Calls   int     `json:"calls"`
	MedianS float64 `json:"median_s"`
	MinS    float64 `json:"min_s"`
	Batched bool    `json:"batched,omitempty"`
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
		key := string(op.Kind) + " " + k
		if len(op.Group) < 2 || seen[key] {
			continue
		}
		seen[key] = true
		p, err := probeOne(ctx, op, c, comm, groups, calls)
		if err != nil {
			return nil, fmt.Errorf("link probe: %s over ranks %s: %w", op.Kind, k, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// probeOne times calls calls of op back to back after one untimed. On a
// host that computes synchronously each call is timed on its own; on a
// device (a DeviceClock Compute, whose collectives are queued) the calls
// are queued back to back and synced once, each call the batch's mean —
// a sync after every call would add the host's round trip to the device,
// which a run's queued collectives do not pay.
func probeOne(ctx context.Context, op *partition.Op, c Compute, comm Comm, groups map[string]Group, calls int) (LinkProbe, error) {
	p := LinkProbe{Kind: string(op.Kind), Ranks: slices.Clone(op.Group), Bytes: op.Bytes, Calls: calls}
	call := func() error { return runOp(ctx, op, c, comm, groups, nil) }
	if err := call(); err != nil {
		return p, err
	}
	if err := c.Sync(ctx); err != nil {
		return p, err
	}
	if _, queued := c.(DeviceClock); queued {
		t0 := time.Now()
		for range calls {
			if err := call(); err != nil {
				return p, err
			}
		}
		if err := c.Sync(ctx); err != nil {
			return p, err
		}
		p.Batched = true
		p.MedianS = time.Since(t0).Seconds() / float64(calls)
		p.MinS = p.MedianS
		return p, nil
	}
	times := make([]float64, calls)
	for j := range times {
		t0 := time.Now()
		if err := call(); err != nil {
			return p, err
		}
		times[j] = time.Since(t0).Seconds()
	}
	p.MedianS, p.MinS = stats.Median(times), slices.Min(times)
	return p, nil
}
