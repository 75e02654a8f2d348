package configs

import (
	"errors"
	"fmt"
	"math"
)

// OpTime is one entry of a hardware profile's op-time table: the measured
// time of one op kind at one shape. Shape names the dimensions that must
// match exactly (for a GEMM "n=4096 k=4096", for attention the heads, KV
// heads, head dim and sequences); Size is the axis interpolated along (token
// rows of a compute op, bytes of a collective or transfer) and Context the
// second axis of attention (the positions the last query sees; 0 for every
// other kind). sim.OpKey is the one definition of an op's kind, shape, size
// and context; sim.OpTable looks entries up and interpolates between them.
type OpTime struct {
	Kind    string `toml:"kind" json:"kind"`
	Shape   string `toml:"shape" json:"shape"`
	Size    int64  `toml:"size" json:"size"`
	Context int64  `toml:"context" json:"context,omitempty"`
	// TimeS is the median of the measured times; TimeMinS and TimeMaxS the
	// extremes over Samples repeats.
	TimeS    float64 `toml:"time_s" json:"time_s"`
	TimeMinS float64 `toml:"time_min_s" json:"time_min_s"`
	TimeMaxS float64 `toml:"time_max_s" json:"time_max_s"`
	Samples  int     `toml:"samples" json:"samples"`
	// Ranks is how many ranks ran the measurement concurrently on the host
	// (1: the machine to itself; N: N workers sharing its cores, as N local
	// ranks of a run do).
	Ranks int `toml:"ranks" json:"ranks"`
}

// ValidateOpTimes checks every entry (field paths name where: key[i].field)
// and that no two entries have the same kind, shape, size, context and
// ranks.
func ValidateOpTimes(key string, ts []OpTime) error {
	var errs []error
	type at struct {
		kind, shape   string
		size, context int64
		ranks         int
	}
	seen := map[at]int{}
	for i, t := range ts {
		p := fmt.Sprintf("%s[%d]", key, i)
		if t.Kind == "" {
			errs = append(errs, fmt.Errorf("%s.kind: must name an op kind (gemm, attention, rmsnorm, …)", p))
		}
		if t.Size < 1 {
			errs = append(errs, fmt.Errorf("%s.size: must be ≥ 1 (got %d)", p, t.Size))
		}
		if t.Context < 0 {
			errs = append(errs, fmt.Errorf("%s.context: must be ≥ 0 (got %d)", p, t.Context))
		}
		if !(t.TimeS > 0) || math.IsInf(t.TimeS, 0) {
			errs = append(errs, fmt.Errorf("%s.time_s: must be a positive, finite time in seconds (got %g)", p, t.TimeS))
		}
		if !(t.TimeMinS <= t.TimeS && t.TimeS <= t.TimeMaxS) {
			errs = append(errs, fmt.Errorf("%s: must have time_min_s ≤ time_s ≤ time_max_s (got %g, %g, %g)", p, t.TimeMinS, t.TimeS, t.TimeMaxS))
		}
		if t.Samples < 1 {
			errs = append(errs, fmt.Errorf("%s.samples: must be ≥ 1 (got %d)", p, t.Samples))
		}
		if t.Ranks < 1 {
			errs = append(errs, fmt.Errorf("%s.ranks: must be ≥ 1 (got %d)", p, t.Ranks))
		}
		if err := validateCollectiveEntry(p, t); err != nil {
			errs = append(errs, err)
		}
		k := at{t.Kind, t.Shape, t.Size, t.Context, t.Ranks}
		if j, dup := seen[k]; dup {
			errs = append(errs, fmt.Errorf("%s: same kind, shape, size, context and ranks as %s[%d] (%s %q size %d context %d ranks %d)", p, key, j, t.Kind, t.Shape, t.Size, t.Context, t.Ranks))
		} else {
			seen[k] = i
		}
	}
	return errors.Join(errs...)
}

// commKinds are the op kinds the link carries; the rest compute.
var commKinds = map[string]bool{"all_reduce": true, "all_gather": true, "send": true, "recv": true, CoreWaitKind: true, CoreWaitIdleKind: true, RecvWaitKind: true, RecvWaitTurnsKind: true, TurnOffKind: true, CoreStretchKind: true, SendCallKind: true, SendCallAsleepKind: true, SendCallAsleepCrossKind: true,
	CoreExitLagKind: true, CoreExitLagIdleKind: true, ReplicaSpreadKind: true, InPlaceWaitKind: true}

// IsCommKind reports whether an op-time kind is communication.
func IsCommKind(kind string) bool { return commKinds[kind] }

// OpTimesFor picks from ts, for each kind and shape, the entries measured
// at the placement closest to the target: compute kinds measured with
// compute concurrent workers, communication kinds among comm ranks on the
// host — exactly that count if there are any, else the nearest (ties: the
// larger; a placementOnly kind: that count only). off lists "kind (measured at N)" for each kind taken at another
// count than its target.
func OpTimesFor(ts []OpTime, compute, comm int) (out []OpTime, off []string) {
	target := func(kind string) int {
		if IsCommKind(kind) {
			return comm
		}
		return compute
	}
	best := map[string]int{}
	for _, t := range ts {
		k, want := t.Kind+"\x00"+t.Shape, target(t.Kind)
		if placementOnly(t.Kind) && t.Ranks != want {
			continue
		}
		b, ok := best[k]
		d, bd := abs(t.Ranks-want), abs(b-want)
		if !ok || d < bd || (d == bd && t.Ranks > b) {
			best[k] = t.Ranks
		}
	}
	seen := map[string]bool{}
	for _, t := range ts {
		if t.Ranks != best[t.Kind+"\x00"+t.Shape] {
			continue
		}
		out = append(out, t)
		if w := fmt.Sprintf("%s (measured at %d)", t.Kind, t.Ranks); t.Ranks != target(t.Kind) && !seen[w] {
			seen[w] = true
			off = append(off, w)
		}
	}
	return out, off
}

// placementOnly reports whether a kind's entries describe the one
// placement they were measured at, which no other rank count shares:
// SendCallAsleepCrossKind (ranks bound two to a CPU, twice the host's
// cores) and InPlaceWaitKind (the op configs of exactly that many ranks
// run through the executor). OpTimesFor takes them at exactly the target
// count or not at all (a send at another count is priced by
// SendCallAsleepKind, a collective by its back-to-back entry alone), and
// so never lists them as measured elsewhere.
func placementOnly(kind string) bool {
	return kind == SendCallAsleepCrossKind || kind == InPlaceWaitKind
}

// ConcurrentRanks is how many of a config's ranks per host compute at the
// same time, at most: every TP rank of every replica, times the pipeline
// stages that can be busy at once — min(PP, micro-batches), since one
// micro-batch is in one stage at a time — and never more than the ranks
// per host.
func ConcurrentRanks(cfg *Config, perHost int) int {
	p := cfg.Parallel
	n := max(1, p.TP) * max(1, p.DP) * min(max(1, p.PP), max(1, p.Microbatches))
	return max(1, min(n, perHost))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// hasComputeAt reports whether ts has a compute op time measured at ranks
// (at once: entries taken in turns come with them).
func hasComputeAt(ts []OpTime, ranks int) bool {
	for _, t := range ts {
		if t.Ranks == ranks && !IsCommKind(t.Kind) && !IsTurnsKind(t.Kind) {
			return true
		}
	}
	return false
}
