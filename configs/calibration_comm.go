package configs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CommOps are the ops a CPU calibration's link samples ([[comm]]) time:
// an all_reduce over Ranks ranks; the same within pairs of every rank at
// once (…_pairs, Ranks 2); an all_gather over Ranks ranks (Bytes: the
// gathered output, as a Program's all_gather counts them) and within pairs;
// and sendrecv, the one-way time of a ping-pong between two ranks.
var CommOps = []string{"all_reduce", "all_reduce_pairs", "all_gather", "all_gather_pairs", "sendrecv"}

// commOpPairs reports whether a link sample's op runs between two ranks.
func commOpPairs(op string) bool {
	return op == "sendrecv" || strings.HasSuffix(op, "_pairs")
}

// validateComm checks every link sample (field paths comm[i].field): a
// known op, its group size (2 for a pair's op and sendrecv, at least 2
// otherwise), a positive payload (an all_gather's a multiple of its ranks:
// one equal block each), and min ≤ median ≤ max of positive, finite times.
func validateComm(ss []CommSample) error {
	var errs []error
	for i, s := range ss {
		p := fmt.Sprintf("comm[%d]", i)
		if !slices.Contains(CommOps, s.Op) {
			errs = append(errs, fmt.Errorf("%s.op: must be one of %s (got %q)", p, strings.Join(CommOps, ", "), s.Op))
			continue
		}
		switch {
		case commOpPairs(s.Op) && s.Ranks != 2:
			errs = append(errs, fmt.Errorf("%s.ranks: %s runs between 2 ranks: must be 2 (got %d)", p, s.Op, s.Ranks))
		case s.Ranks < 2:
			errs = append(errs, fmt.Errorf("%s.ranks: %s over a group: must be ≥ 2 (got %d)", p, s.Op, s.Ranks))
		}
		if s.Bytes < 1 {
			errs = append(errs, fmt.Errorf("%s.bytes: must be ≥ 1 (got %d)", p, s.Bytes))
		} else if strings.HasPrefix(s.Op, "all_gather") && s.Ranks >= 2 && s.Bytes%int64(s.Ranks) != 0 {
			errs = append(errs, fmt.Errorf("%s.bytes: an all_gather over %d ranks gathers %d equal blocks: must be a multiple of %d (got %d)", p, s.Ranks, s.Ranks, s.Ranks, s.Bytes))
		}
		if !(s.TimeMinS > 0 && s.TimeMinS <= s.TimeMedianS && s.TimeMedianS <= s.TimeMaxS) || math.IsInf(s.TimeMaxS, 0) {
			errs = append(errs, fmt.Errorf("%s: must have positive, finite times, time_min_s ≤ time_median_s ≤ time_max_s (got %g, %g, %g)", p, s.TimeMinS, s.TimeMedianS, s.TimeMaxS))
		}
	}
	return errors.Join(errs...)
}

// validateCollectiveEntry checks an op-time entry of a collective or a
// transfer (field path p): the shape sim.OpKey writes for it — "ranks=N"
// with N ≥ 2 the group's ranks (send and recv: "ranks=2") — and, for an
// all_gather, a size (the gathered bytes) that is a multiple of N. Entries
// of every other kind pass.
func validateCollectiveEntry(p string, t OpTime) error {
	if t.Kind == InPlaceWaitKind && !inPlaceWaitShapeOK(t.Shape) {
		return fmt.Errorf("%s.shape: the shape of %s entries must be \"KIND ranks=N\", KIND all_reduce or all_gather and N ≥ 2 the ranks of its group (got %q)", p, t.Kind, t.Shape)
	}
	switch t.Kind {
	case "all_reduce", "all_gather", "send", "recv":
	default:
		return nil
	}
	n, ok := groupRanks(t)
	switch {
	case !ok:
		return fmt.Errorf("%s.shape: the shape of %s entries must be \"ranks=N\", N ≥ 2 the ranks of the group (got %q)", p, t.Kind, t.Shape)
	case (t.Kind == "send" || t.Kind == "recv") && n != 2:
		return fmt.Errorf("%s.shape: the shape of %s entries must be \"ranks=2\" (got %q)", p, t.Kind, t.Shape)
	case t.Kind == "all_gather" && t.Size%int64(n) != 0:
		return fmt.Errorf("%s.size: an all_gather over %d ranks gathers %d equal blocks: must be a multiple of %d bytes (got %d)", p, n, n, n, t.Size)
	}
	return nil
}

// groupRanks is the group size N of a collective's or transfer's entry
// ("ranks=N", N ≥ 2, as sim.OpKey writes it); ok is false for any other
// shape.
func groupRanks(t OpTime) (n int, ok bool) {
	if !strings.HasPrefix(t.Shape, "ranks=") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(t.Shape, "ranks="))
	return n, err == nil && n >= 2
}

// withoutLargerGroups is ts less the collective and transfer entries whose
// group has more ranks than a config of ranks ranks: no op of the config
// is looked up at them, and a profile calibrated for a larger job keeps
// them (a 16-rank all_reduce measured at 16) without the config being told
// that its placement was not measured for them.
func withoutLargerGroups(ts []OpTime, ranks int) []OpTime {
	var out []OpTime
	for _, t := range ts {
		if n, ok := groupRanks(t); ok && IsCommKind(t.Kind) && n > ranks {
			continue
		}
		out = append(out, t)
	}
	return out
}
