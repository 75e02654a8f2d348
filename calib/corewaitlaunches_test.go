package calib

import (
	"math"
	"testing"
)

// TestPoolLaunches: two launches of one group of two sizes, two repeats
// each, join size by size, launch 1's values first.
func TestPoolLaunches(t *testing.T) {
	a := [][][]float64{{{1, 2}, {3, 4}}}
	b := [][][]float64{{{5, 6}, {7, 8}}}
	got, err := poolLaunches([][][][]float64{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := [][][]float64{{{1, 2, 5, 6}, {3, 4, 7, 8}}}
	for g := range want {
		for s := range want[g] {
			for i := range want[g][s] {
				if got[g][s][i] != want[g][s][i] {
					t.Fatalf("pooled %v, want %v", got, want)
				}
			}
		}
	}
	if a[0][0][0] != 1 || len(a[0][0]) != 2 {
		t.Errorf("the first launch's times were changed: %v", a)
	}
	if _, err := poolLaunches([][][][]float64{a, {{{5, 6}}}}); err == nil {
		t.Error("launches of different sizes pooled without an error")
	}
	if _, err := poolLaunches(nil); err == nil {
		t.Error("no launch pooled without an error")
	}
}

// TestCoreWaitEntryPooledLaunches: the core wait over three launches of
// three repeats each is the median over the nine repeats. Back to back
// 20 µs throughout; after a 6 µs burst the all_reduce took (µs)
//
//	launch 1: 40, 40, 40   → W = (40 − 20)/2 = 10 per repeat
//	launch 2: 22, 22, 22   → W = 1
//	launch 3: 24, 24, 24   → W = 2
//
// One launch alone records 10, 1 or 2 µs; pooled, the nine repeats' W
// sorted are 1, 1, 1, 2, 2, 2, 10, 10, 10, median (the fifth) 2 µs, min
// 1, max 10, nine samples.
func TestCoreWaitEntryPooledLaunches(t *testing.T) {
	launch := func(arUS float64) [][][]float64 {
		alone := [][]float64{{20e-6, 20e-6, 20e-6}}
		after := [][]float64{{arUS * 1e-6, 6e-6, arUS * 1e-6, 6e-6, arUS * 1e-6, 6e-6}}
		return [][][]float64{alone, after}
	}
	pooled, err := poolLaunches([][][][]float64{launch(40), launch(22), launch(24)})
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := coreWaitEntry(pooled[0], pooled[1], 4, 2)
	if err != nil || !ok {
		t.Fatalf("entry: ok %v, err %v", ok, err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"median", e.TimeS, 2e-6}, {"min", e.TimeMinS, 1e-6}, {"max", e.TimeMaxS, 10e-6}} {
		if math.Abs(c.got-c.want) > 1e-15 {
			t.Errorf("%s %g s, want %g s", c.name, c.got, c.want)
		}
	}
	if e.Samples != 9 || e.Size != 6000 {
		t.Errorf("samples %d at size %d ns, want 9 at 6000", e.Samples, e.Size)
	}
	one, _, err := coreWaitEntry(launch(40)[0], launch(40)[1], 4, 2)
	if err != nil || math.Abs(one.TimeS-10e-6) > 1e-15 {
		t.Errorf("launch 1 alone: %g s (err %v), want 1e-05 s", one.TimeS, err)
	}
}
