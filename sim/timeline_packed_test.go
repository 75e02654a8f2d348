package sim

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestPackedSlicesMatchUnpacked holds a packed timeline to the slices the
// simulation made: every config of configs/ and configs/test, one rank per
// stage and every rank, simulated step by step (no slice written from
// another) once packed and once with its slices appended as Slices, as
// they end (Options.unpacked). All, At and List must give the appended
// slices, field for field, and the estimates must be equal.
func TestPackedSlicesMatchUnpacked(t *testing.T) {
	files, err := filepath.Glob("../configs/test/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs/test configs: %v", err)
	}
	top, _ := filepath.Glob("../configs/*.toml")
	packed := 0
	for _, f := range append(files, top...) {
		cfg, err := configs.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, every := range []bool{false, true} {
			got, err := EstimatePlan(plan, Options{EveryRank: every, stepwise: true})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want, err := EstimatePlan(plan, Options{EveryRank: every, stepwise: true, unpacked: true})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			gt, wt := got.Timeline, want.Timeline
			if wt.packed != nil || len(wt.Slices) == 0 {
				t.Fatalf("%s: the reference is packed", f)
			}
			if gt.packed != nil {
				packed++
				if len(gt.Slices) != 0 {
					t.Errorf("%s: packed and unpacked slices both", f)
				}
			}
			if gt.Len() != len(wt.Slices) {
				t.Errorf("%s every=%v: %d slices, appended %d", f, every, gt.Len(), len(wt.Slices))
				continue
			}
			list := gt.List()
			for i := range list {
				if !reflect.DeepEqual(list[i], wt.Slices[i]) {
					t.Fatalf("%s every=%v: slice %d %+v, appended %+v", f, every, i, list[i], wt.Slices[i])
				}
			}
			n := 0
			for i, sl := range gt.All() {
				if i != n || !reflect.DeepEqual(sl, wt.Slices[i]) {
					t.Fatalf("%s every=%v: All's slice %d (index %d) %+v, appended %+v", f, every, n, i, sl, wt.Slices[n])
				}
				n++
			}
			for _, i := range []int{0, n / 3, n / 2, n - 1} {
				if sl := gt.At(i); !reflect.DeepEqual(sl, wt.Slices[i]) {
					t.Errorf("%s every=%v: At(%d) %+v, appended %+v", f, every, i, sl, wt.Slices[i])
				}
			}
			g, w := *got, *want
			g.Timeline, w.Timeline = nil, nil
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s every=%v: the estimate differs from the unpacked one", f, every)
			}
		}
	}
	if packed == 0 {
		t.Error("no timeline was packed")
	}
}

// TestPackedSlicesSorted: a packed timeline is kept only in the order
// sortSlices gives (by rank, then start); else run sorts it as before.
// By hand: ranks 3 and 5 with starts 0, 1 and 1, 2 are sorted; rank 5's
// second start 0.5 < its first 1 is not, nor are ranks 5 then 3.
func TestPackedSlicesSorted(t *testing.T) {
	p := &packedSlices{ids: []int{3, 5}, base: []int{0, 2, 4}, times: []sliceTimes{{StartS: 0}, {StartS: 1}, {StartS: 1}, {StartS: 2}}}
	if !p.sorted() {
		t.Error("sorted slices reported unsorted")
	}
	p.times[3].StartS = 0.5
	if p.sorted() {
		t.Error("a start going back reported sorted")
	}
	p.times[3].StartS = 2
	p.ids = []int{5, 3}
	if p.sorted() {
		t.Error("ranks 5 then 3 reported sorted")
	}
	// Equal starts keep their order (a stable sort leaves them).
	p.ids = []int{3, 5}
	p.times[1].StartS = 0
	if !p.sorted() {
		t.Error("equal starts reported unsorted")
	}
}
