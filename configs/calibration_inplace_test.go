package configs

import (
	"strings"
	"testing"
)

// An in-place wait's shape names its collective and group; any other is
// refused naming the entry and the shape wanted.
func TestValidateInPlaceWait(t *testing.T) {
	e := func(shape string) OpTime {
		return OpTime{Kind: InPlaceWaitKind, Shape: shape, Size: 5000, TimeS: 1e-6, TimeMinS: 1e-6, TimeMaxS: 1e-6, Samples: 3, Ranks: 2}
	}
	for _, ok := range []string{"all_reduce ranks=2", "all_gather ranks=4"} {
		if err := ValidateOpTimes("op_time", []OpTime{e(ok)}); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"ranks=2", "send ranks=2", "all_reduce ranks=1", "all_reduce", "all_reduce width=64"} {
		err := ValidateOpTimes("op_time", []OpTime{e(bad)})
		if err == nil || !strings.Contains(err.Error(), "op_time[0].shape") || !strings.Contains(err.Error(), "KIND ranks=N") {
			t.Errorf("%q: %v; want op_time[0].shape refused", bad, err)
		}
	}
}

// OpTimesFor takes an in-place wait at exactly the placement it was
// measured at (2 process ranks) and never elsewhere — at 4 the 2-rank
// entry would price collectives among ranks that wait for a core — and
// lists it as measured elsewhere for none; the back-to-back all_reduce
// beside it goes to the nearest count as before.
func TestOpTimesForInPlaceWait(t *testing.T) {
	e := func(kind, shape string, ranks int) OpTime {
		return OpTime{Kind: kind, Shape: shape, Size: 1024, TimeS: 1e-6, TimeMinS: 1e-6, TimeMaxS: 1e-6, Samples: 5, Ranks: ranks}
	}
	ts := []OpTime{e("all_reduce", "ranks=2", 2), e(InPlaceWaitKind, "all_reduce ranks=2", 2)}
	for _, c := range []struct {
		comm    int
		inPlace bool
	}{{2, true}, {4, false}, {1, false}} {
		got, off := OpTimesFor(ts, 1, c.comm)
		inPlace, b2b := false, false
		for _, g := range got {
			inPlace = inPlace || g.Kind == InPlaceWaitKind
			b2b = b2b || g.Kind == "all_reduce"
		}
		if inPlace != c.inPlace || !b2b || strings.Contains(strings.Join(off, ", "), InPlaceWaitKind) {
			t.Errorf("comm %d: in place %v, back to back %v, off %q; want in place %v, back to back, none listed", c.comm, inPlace, b2b, off, c.inPlace)
		}
	}
}
