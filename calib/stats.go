package calib

import (
	"math"
	"sort"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/partbench/partbench/configs"
)

// spreadOf is the min, median and max of xs (not modified).
func spreadOf(xs []float64) configs.Spread {
	if len(xs) == 0 {
		return configs.Spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return configs.Spread{Min: s[0], Median: median(s), Max: s[len(s)-1], N: len(s)}
}

// median of sorted xs: gonum's empirical 0.5-quantile, the definition every
// median and p50 in partbench uses (for an even count, the lower middle
// element: a median that is always one of the samples).
func median(sorted []float64) float64 { return stat.Quantile(0.5, stat.Empirical, sorted, nil) }

// lowerMedianInt is the lower middle element, so that the median of sizes is
// one of the sizes measured.
func lowerMedianInt(xs []int64) int64 {
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2]
}

func medianOf(xs []float64) float64 { return spreadOf(xs).Median }

// timePer is the time of one call of f: after one warm-up call, f runs in
// batches, each sized from the last, until one batch lasts at least minDur.
func timePer(minDur time.Duration, f func()) float64 {
	f()
	n := 1
	for {
		start := time.Now()
		for i := 0; i < n; i++ {
			f()
		}
		d := time.Since(start)
		if d >= minDur {
			return d.Seconds() / float64(n)
		}
		next := float64(n) * 16
		if d > 0 {
			next = math.Min(next, float64(n)*1.2*float64(minDur)/float64(d)+1)
		}
		n = int(next)
	}
}
