package calib

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The link among ranks bound to a CPU each. Where the ranks do not
// outnumber the cores, each is bound to its own CPU (as a run's are) and
// the communicator's waits spin; a 2-rank all_reduce of up to a few KiB
// then takes one of two times for the whole life of the processes — about
// 0.6–0.8 µs, or 1.6–2.2 µs at every small size with a tight spread over
// the launch's interleaved repeats — in 15 of 24 calibrations measured in
// one launch on 2026-11-26 (docs/measurements/cpu-calibration.md,
// (thirteenth)), moving tp2-tiny's modeled TPOT by a fifth. Runs show the
// same two states, the faster in 16 of 24. The link at such a count is
// therefore measured in linkLaunchesBound launches, and each group and
// size takes the launch with the lowest median: the model prices the
// faster state unless every launch met the slower (two calibrations of
// six: the state changes over minutes more than between launches).

// linkLaunchesBound is how many launches of bound ranks the link is
// measured in (boundLinkTimes).
const linkLaunchesBound = 5

// fastestLaunch picks, per group and size, the repeats of the launch whose
// median is lowest (launches [launch][group][size][repeat], every launch
// of the same groups and sizes), and returns them with each launch's
// median at that group and size ([group][size][launch]).
func fastestLaunch(launches [][][][]float64) (best [][][]float64, medians [][][]float64, err error) {
	if len(launches) == 0 {
		return nil, nil, fmt.Errorf("link: no launches")
	}
	groups := len(launches[0])
	best, medians = make([][][]float64, groups), make([][][]float64, groups)
	for g := 0; g < groups; g++ {
		sizes := len(launches[0][g])
		best[g], medians[g] = make([][]float64, sizes), make([][]float64, sizes)
		for s := 0; s < sizes; s++ {
			lo := -1.0
			for l, times := range launches {
				if len(times) != groups || len(times[g]) != sizes || len(times[g][s]) == 0 {
					return nil, nil, fmt.Errorf("link: launch %d has another shape of times than launch 0 (group %d, size %d)", l, g, s)
				}
				m := medianOf(times[g][s])
				medians[g][s] = append(medians[g][s], m)
				if lo < 0 || m < lo {
					lo, best[g][s] = m, times[g][s]
				}
			}
		}
	}
	return best, medians, nil
}

// LinkStatesFactor is how far apart (the slowest launch's median over the
// fastest's) the launches of one group may read before calibrate warns
// that the link took two states while it measured.
const LinkStatesFactor = 1.5

// boundLinkTimesSized measures the link among n process ranks bound to a
// CPU each in linkLaunchesBound launches (measureLinkProcsSized: each
// group i timed at its sizes groupSizes[i]) and returns each group's and
// size's times from its fastest launch, a description of the launches'
// medians at the size nearest 1 KiB for a note, and the groups whose
// launches there read two states (describeLaunches).
func boundLinkTimesSized(ctx context.Context, argv []string, n int, groups []commGroup, groupSizes [][]int64, repeats int, minDur time.Duration) ([][][]float64, string, []string, error) {
	var launches [][][][]float64
	for l := 0; l < linkLaunchesBound; l++ {
		times, err := measureLinkProcsSized(ctx, argv, n, groups, groupSizes, repeats, minDur)
		if err != nil {
			return nil, "", nil, err
		}
		launches = append(launches, times)
	}
	best, medians, err := fastestLaunch(launches)
	if err != nil {
		return nil, "", nil, err
	}
	desc, two := describeLaunches(groups, groupSizes, medians)
	return best, desc, two, nil
}

// describeLaunches describes each group's launch medians ([group][size]
// [launch], s) at its size nearest 1 KiB, "all_reduce over 2 at 1024 B:
// 0.69, 2.05, … µs", groups sorted by that text; two lists the groups
// whose slowest launch there read over LinkStatesFactor × the fastest
// ("all_reduce over 2 at 1024 B: 0.717–2.19 µs").
func describeLaunches(groups []commGroup, groupSizes [][]int64, medians [][][]float64) (desc string, two []string) {
	var parts []string
	for gi, g := range groups {
		sizes := groupSizes[gi]
		si := 0
		for i, s := range sizes {
			if abs64(s-1024) < abs64(sizes[si]-1024) {
				si = i
			}
		}
		ms := medians[gi][si]
		var strs []string
		for _, m := range ms {
			strs = append(strs, fmt.Sprintf("%.3g", m*1e6))
		}
		what := fmt.Sprintf("%s over %d at %d B", g.op, sampleRanks(g.op, g.ranks), sizes[si])
		parts = append(parts, fmt.Sprintf("%s: %s µs", what, strings.Join(strs, ", ")))
		if lo, hi := slices.Min(ms), slices.Max(ms); lo > 0 && hi > LinkStatesFactor*lo {
			two = append(two, fmt.Sprintf("%s: %.3g–%.3g µs", what, lo*1e6, hi*1e6))
		}
	}
	slices.Sort(parts)
	slices.Sort(two)
	return strings.Join(parts, "; "), two
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
