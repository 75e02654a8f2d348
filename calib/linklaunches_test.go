package calib

import "testing"

// TestFastestLaunch: three launches of one group at two sizes, three
// repeats each (µs):
//
//	launch   64 B (median)        1 KiB (median)
//	0        2.0 1.9 2.1 (2.0)    2.2 2.0 2.1 (2.1)   the slow state
//	1        0.7 0.6 5.0 (0.7)    0.8 0.7 0.6 (0.7)
//	2        0.6 0.9 0.5 (0.6)    0.9 0.8 0.7 (0.8)
//
// → 64 B takes launch 2's repeats, 1 KiB launch 1's; the medians per
// launch are kept in launch order. Launches of different shapes are an
// error.
func TestFastestLaunch(t *testing.T) {
	l := [][][][]float64{
		{{{2.0, 1.9, 2.1}, {2.2, 2.0, 2.1}}},
		{{{0.7, 0.6, 5.0}, {0.8, 0.7, 0.6}}},
		{{{0.6, 0.9, 0.5}, {0.9, 0.8, 0.7}}},
	}
	best, med, err := fastestLaunch(l)
	if err != nil {
		t.Fatal(err)
	}
	eq := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if !eq(best[0][0], []float64{0.6, 0.9, 0.5}) || !eq(best[0][1], []float64{0.8, 0.7, 0.6}) {
		t.Errorf("fastest %v, want launch 2's at 64 B and launch 1's at 1 KiB", best)
	}
	if !eq(med[0][0], []float64{2.0, 0.7, 0.6}) || !eq(med[0][1], []float64{2.1, 0.7, 0.8}) {
		t.Errorf("medians %v, want [2 0.7 0.6] and [2.1 0.7 0.8]", med)
	}
	if _, _, err := fastestLaunch(append(l, [][][]float64{{{1}}})); err == nil {
		t.Error("a launch of one size among launches of two: no error")
	}
	if _, _, err := fastestLaunch(nil); err == nil {
		t.Error("no launches: no error")
	}
}

// describeLaunches: each group's launch medians at its size nearest 1 KiB,
// and the groups whose slowest launch there read over 1.5× the fastest —
// the all_reduce's 0.717 and 2.19 µs (×3.05) — but not the sendrecv's
// 0.8–1.1 µs (×1.38), nor a size away from 1 KiB that spread.
func TestDescribeLaunches(t *testing.T) {
	groups := []commGroup{{op: opAllReduce, ranks: []int{0, 1}}, {op: opSendRecv, ranks: []int{0, 1}}}
	sizes := [][]int64{{256, 1024}, {1024, 65536}}
	medians := [][][]float64{
		{{0.5e-6, 0.5e-6, 3e-6}, {1.95e-6, 2.19e-6, 0.717e-6}},
		{{0.8e-6, 1.1e-6, 0.9e-6}, {9e-6, 30e-6, 10e-6}},
	}
	desc, two := describeLaunches(groups, sizes, medians)
	if want := "all_reduce over 2 at 1024 B: 1.95, 2.19, 0.717 µs; sendrecv over 2 at 1024 B: 0.8, 1.1, 0.9 µs"; desc != want {
		t.Errorf("description %q, want %q", desc, want)
	}
	if len(two) != 1 || two[0] != "all_reduce over 2 at 1024 B: 0.717–2.19 µs" {
		t.Errorf("two states %q, want the all_reduce's alone", two)
	}
}
