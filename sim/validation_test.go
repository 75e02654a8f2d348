package sim

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/partbench/partbench/commcount"
)

// Published nccl-tests busbw (GB/s, out-of-place) at 1 MiB … 8 GiB, doubling.
// Sources and settings: docs/validation.md.
var (
	// VP: 8×H100 80GB HBM3 SXM (HGX), NCCL 2.24.3, all_reduce, default algorithm (NVLS).
	publishedVP8AllReduce = []float64{47.37, 84.89, 131.77, 173.79, 233.25, 293.02, 357.44, 399.19, 422.38, 436.40, 468.53, 474.62, 477.12, 479.72}
	// WH: 4 of 8 H100 80GB HBM3 (NV18), NCCL 2.29, all_reduce (NVLS) and all_gather (ring).
	publishedWH4AllReduce = []float64{58.18, 100.59, 144.94, 200.12, 246.47, 285.66, 308.92, 325.89, 340.82, 348.36, 357.03, 361.00, 363.25, 366.37}
	publishedWH4AllGather = []float64{35.00, 69.65, 81.09, 110.23, 186.64, 229.34, 258.16, 287.39, 305.51, 317.53, 325.27, 334.16, 339.82, 343.92}
)

// heldOut: the split fixed before fitting — every third size from 2 MiB
// (2, 16, 128 MiB, 1, 8 GiB) of the VP and WH all_gather tables is held
// out; the whole WH all_reduce table (a group size the fit never saw) is held out.
func heldOut(i int) bool { return i%3 == 1 }

type collPoint struct {
	table     string
	op        commcount.Op
	n         int
	bytes     int64
	published float64
	fit       bool
}

func collValidationPoints() []collPoint {
	var out []collPoint
	for _, tb := range []struct {
		name    string
		op      commcount.Op
		n       int
		vals    []float64
		allTest bool
	}{
		{"VP 8×H100 all_reduce", commcount.AllReduce, 8, publishedVP8AllReduce, false},
		{"WH 4×H100 all_gather", commcount.AllGather, 4, publishedWH4AllGather, false},
		{"WH 4×H100 all_reduce", commcount.AllReduce, 4, publishedWH4AllReduce, true},
	} {
		for i, v := range tb.vals {
			out = append(out, collPoint{tb.name, tb.op, tb.n, int64(1<<20) << i, v, !tb.allTest && !heldOut(i)})
		}
	}
	return out
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestCollectiveRampValidation prints docs/validation.md's collective table
// (run with -v) and asserts every fit point and every held-out point of the
// 8-GPU NVLS table within 15 % (the bar for sizes ≥ 1 MiB). The
// held-out WH points (4 GPUs) are reported, not asserted: several miss the bar
// (docs/validation.md says which and why).
func TestCollectiveRampValidation(t *testing.T) {
	var fitErr, testErr []float64
	t.Log("| table | size | set | algo/proto | modeled busbw | published | error |")
	for _, p := range collValidationPoints() {
		e := mustCollective(t, dgxH100(1), p.op, firstRanks(p.n), p.bytes, CollectiveOptions{})
		got := e.BusBWBytesPerS / 1e9
		rel := (got - p.published) / p.published
		set := "held-out"
		if p.fit {
			set = "fit"
			fitErr = append(fitErr, math.Abs(rel))
		} else {
			testErr = append(testErr, math.Abs(rel))
		}
		t.Logf("| %s | %s | %s | %s/%s | %.1f | %.2f | %+.1f %% |", p.table, sizeLabel(p.bytes), set, e.Algo, e.Proto, got, p.published, 100*rel)
		if (p.fit || p.table == "VP 8×H100 all_reduce") && math.Abs(rel) > 0.15 {
			t.Errorf("%s %s (%s): modeled %.1f GB/s, published %.2f: %+.1f %% beyond 15 %%", p.table, sizeLabel(p.bytes), set, got, p.published, 100*rel)
		}
	}
	t.Log(fmt.Sprintf("median |error|: fit %.1f %% (%d points), held-out %.1f %% (%d points)", 100*median(fitErr), len(fitErr), 100*median(testErr), len(testErr)))
}
