package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/commcount"
)

// smallTable is a published all_reduce_perf run below 1 MiB: out-of-place
// times in µs from 8 B, doubling, and how nccl-tests launched it.
type smallTable struct {
	name    string
	n       int
	timing  NCCLTestsTiming
	heldOut bool
	timesUS []float64
}

// smallTables: the fit pair and the held-out pair, split before the launch
// term was fitted (docs/validation.md, "Collectives below 1 MiB").
func smallTables() []smallTable {
	return []smallTable{
		// VP (docs/validation.md): 8 × H100 on one thread (nThread 1 nGpus 8), graph 0.
		{"VP 8×H100", 8, NCCLTestsTiming{GPUsPerThread: 8}, false, []float64{33.18, 32.76, 32.76, 33.23, 33.27, 33.01, 33.50, 33.36, 33.44, 33.19, 33.09, 32.95, 32.74, 33.62, 34.26, 35.05, 36.97}},
		// WHq (results/quiet/all_reduce.txt at 8ab7496): 4 × H100, nGpus 4, graph 0.
		{"WHq 4×H100", 4, NCCLTestsTiming{GPUsPerThread: 4}, false, []float64{23.30, 23.44, 23.23, 23.34, 23.17, 23.30, 23.27, 23.28, 23.23, 23.17, 23.75, 24.34, 25.05, 25.49, 26.32, 27.19, 27.88}},
		// WH symmetric (results/symmetric/all_reduce_reg0_graph{0,1}.txt at
		// 207ff75): a later run on the same kind of board, 4 × H100, nGpus 4,
		// without and with CUDA graphs. Held out.
		{"WH sym 4×H100 graph 0", 4, NCCLTestsTiming{GPUsPerThread: 4}, true, []float64{23.51, 25.13, 25.01, 25.07, 25.29, 25.12, 25.13, 24.02, 24.67, 24.50, 25.86, 25.90, 27.15, 27.15, 28.27, 28.26, 28.92}},
		{"WH sym 4×H100 graph 1", 4, NCCLTestsTiming{GPUsPerThread: 4, Graph: true}, true, []float64{16.08, 15.33, 15.76, 16.40, 16.34, 17.03, 16.78, 16.88, 15.25, 15.52, 15.46, 16.19, 16.77, 16.76, 17.26, 17.38, 20.12}},
	}
}

// TestCollectiveSmallSizesValidation prints docs/validation.md's table below
// 1 MiB (run with -v): busbw error = measured time / modeled time − 1 (busbw
// is printed to 0.01 GB/s, 0.00 below a few KiB; the time keeps its
// digits), before and after nccl-tests' launch term, and asserts the fit and
// held-out medians within the 25 % bar.
func TestCollectiveSmallSizesValidation(t *testing.T) {
	sys := dgxH100(1)
	var fitBefore, fitAfter, heldBefore, heldAfter []float64
	t.Log("| table | set | size | algo/proto | published (µs) | modeled GPU (µs) | modeled as nccl-tests (µs) | busbw error |")
	for _, tb := range smallTables() {
		var sizes []int64
		for i := range tb.timesUS {
			sizes = append(sizes, int64(8)<<i)
		}
		rows, err := CollectiveSweep(sys, commcount.AllReduce, []int{tb.n}, sizes, "float", 4, CollectiveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		timed, err := AddNCCLTestsLaunch(sys, commcount.AllReduce, rows, 4, CollectiveOptions{}, tb.timing)
		if err != nil {
			t.Fatal(err)
		}
		set := "fit"
		if tb.heldOut {
			set = "held-out"
		}
		for i, m := range tb.timesUS {
			before, after := m/(rows[i].TimeS*1e6)-1, m/(timed[i].TimeS*1e6)-1
			if tb.heldOut {
				heldBefore, heldAfter = append(heldBefore, math.Abs(before)), append(heldAfter, math.Abs(after))
			} else {
				fitBefore, fitAfter = append(fitBefore, math.Abs(before)), append(fitAfter, math.Abs(after))
			}
			t.Logf("| %s | %s | %s | %s/%s | %.2f | %.2f | %.2f | %+.1f %% |", tb.name, set, sizeLabel(sizes[i]), rows[i].Algo, rows[i].Proto, m, rows[i].TimeS*1e6, timed[i].TimeS*1e6, 100*after)
		}
	}
	t.Logf("median |busbw error| below 1 MiB: fit %.1f %% → %.1f %% (%d points), held-out %.1f %% → %.1f %% (%d points)",
		100*median(fitBefore), 100*median(fitAfter), len(fitAfter), 100*median(heldBefore), 100*median(heldAfter), len(heldAfter))
	if m := median(heldAfter); m > smallCollectiveBar {
		t.Errorf("held-out median %.1f %% beyond %.0f %%", 100*m, 100*smallCollectiveBar)
	}
	if m := median(fitAfter); m > smallCollectiveBar {
		t.Errorf("fit median %.1f %% beyond %.0f %%", 100*m, 100*smallCollectiveBar)
	}
}

// smallCollectiveBar is the goal for busbw below 1 MiB: median |error| ≤ 25 %.
const smallCollectiveBar = 0.25
