package calib

import (
	"math"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/stats"
)

// spreadOf is the min, median and max of xs (not modified), from
// stats.Summarize: the median is stats' one definition (for an even count
// the lower middle sample, so always one of the samples).
func spreadOf(xs []float64) configs.Spread {
	s := stats.Summarize(xs, stats.Linear)
	return configs.Spread{Min: s.Min, Median: s.P50, Max: s.Max, N: s.N}
}

// medianOf is stats.Median, 0 for no samples.
func medianOf(xs []float64) float64 { return spreadOf(xs).Median }

// lowerMedianInt is stats.Median of sizes: the lower middle element, so
// that the median of sizes is one of the sizes measured.
func lowerMedianInt(xs []int64) int64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return int64(stats.Median(f))
}

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
