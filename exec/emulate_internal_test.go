package exec

import (
	"testing"

	"github.com/partbench/partbench/stats"
)

// The emulation's per-op median is the runs' p50: the middle sample of an
// odd count, the lower middle of an even one (gonum's empirical quantile).
func TestMediansIsTheP50OfSummarize(t *testing.T) {
	in := [][]float64{{3, 1, 2}, {4, 1, 3, 2}, {5}, nil}
	// {1,2,3} → 2; {1,2,3,4} → 2 (lower middle); {5} → 5; none → −1.
	want := []float64{2, 2, 5, -1}
	p50 := []float64{stats.Summarize([]float64{3, 1, 2}, stats.Positive).P50, stats.Summarize([]float64{4, 1, 3, 2}, stats.Positive).P50, stats.Summarize([]float64{5}, stats.Positive).P50}
	got := medians(in)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("medians[%d] = %g, want %g", i, got[i], want[i])
		}
		if i < len(p50) && got[i] != p50[i] {
			t.Errorf("medians[%d] = %g, Summarize's p50 %g: two definitions", i, got[i], p50[i])
		}
	}
}
