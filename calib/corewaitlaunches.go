package calib

import (
	"context"
	"fmt"
)

// CoreWaitLaunches is how many launches of the n process ranks the core
// wait's loops (measureCoreWait: the core wait, the wait beside idle
// ranks, the receive wait's ring, the bursts' stretch and the exit lags)
// are measured in; every entry is then the median over all the launches'
// repeats. One launch's five repeats left the 4-rank entries that price a
// decode all-reduce — core_wait after a ~6 µs burst, repeats 0–15 µs per
// step — at medians of 3.0–9.3 µs over six calibrations, and
// tp2-dp2-tiny's and tp2pp2-tiny's modeled TPOT moved with them by up to
// 30 % (docs/measurements/cpu-calibration.md, 2026-11-27 (sixteenth, b)).
// A quick calibration measures one launch.
const CoreWaitLaunches = 3

// coreWaitLaunches is CoreWaitLaunches, 1 for a quick calibration.
func coreWaitLaunches(o Options) int {
	if o.Quick {
		return 1
	}
	return CoreWaitLaunches
}

// measureLinkProcsBurstsLaunches is measureLinkProcsBursts in launches
// launches of the n process ranks, their times pooled (poolLaunches).
func measureLinkProcsBurstsLaunches(ctx context.Context, argv []string, n int, groups []commGroup, bursts []int, sizes []int64, repeats int, o Options, launches int) ([][][]float64, error) {
	var all [][][][]float64
	for l := 0; l < max(1, launches); l++ {
		t, err := measureLinkProcsBursts(ctx, argv, n, groups, bursts, sizes, repeats, o.MinSample)
		if err != nil {
			return nil, err
		}
		all = append(all, t)
	}
	return poolLaunches(all)
}

// poolLaunches joins several launches' times of the same groups and sizes
// ([launch][group][size][the repeats' values, in order]) into one
// [group][size][…]: each size's values of launch 1, then launch 2's, …, so
// a repeat's values stay together and the launches' repeats read as more
// repeats of one measurement.
func poolLaunches(launches [][][][]float64) ([][][]float64, error) {
	if len(launches) == 0 {
		return nil, fmt.Errorf("core wait: no launch measured")
	}
	out := make([][][]float64, len(launches[0]))
	for g, sizes := range launches[0] {
		out[g] = make([][]float64, len(sizes))
		for s := range sizes {
			out[g][s] = append([]float64(nil), sizes[s]...)
		}
	}
	for l, t := range launches[1:] {
		if len(t) != len(out) {
			return nil, fmt.Errorf("core wait: launch %d measured %d groups, launch 1 %d", l+2, len(t), len(out))
		}
		for g := range t {
			if len(t[g]) != len(out[g]) {
				return nil, fmt.Errorf("core wait: launch %d measured %d sizes of group %d, launch 1 %d", l+2, len(t[g]), g, len(out[g]))
			}
			for s := range t[g] {
				out[g][s] = append(out[g][s], t[g][s]...)
			}
		}
	}
	return out, nil
}
