//go:build unix

package calib

import (
	"context"
	"os"
	"testing"
	"time"
)

// Three process ranks time the all_gather over all of them and over the
// pair {0, 1} each at its own sizes (measureLinkProcsSized), beside an
// all_reduce at the common ones: rank 0 reports a positive time for every
// group, its sizes and both repeats.
func TestMeasureLinkProcsSized(t *testing.T) {
	groups := []commGroup{{opAllReduce, []int{0, 1, 2}}, {opAllGather, []int{0, 1, 2}}, {opAllGather, []int{0, 1}}}
	sizes := [][]int64{{16, 4096}, {12, 1536, 4092}, {768}}
	times, err := measureLinkProcsSized(context.Background(), []string{os.Args[0], "-test.run=^$"}, 3, groups, sizes, 2, 200*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	for gi := range groups {
		if len(times[gi]) != len(sizes[gi]) {
			t.Fatalf("group %d: %d sizes, want %d", gi, len(times[gi]), len(sizes[gi]))
		}
		for si := range sizes[gi] {
			if len(times[gi][si]) != 2 {
				t.Fatalf("group %d size %d: %d repeats, want 2", gi, si, len(times[gi][si]))
			}
			for _, v := range times[gi][si] {
				if !(v > 0 && v < 1) {
					t.Fatalf("group %d size %d: time %g s, want in (0, 1)", gi, si, v)
				}
			}
		}
	}
}
