package partition

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// PerRank holds counts by runs and gives back every rank's: Values, At,
// Len and Max as the list does, its JSON byte for byte a []int64's (null
// for nil, [] for none), read back to the same runs; Repeat is the list
// repeated; runs added out of order and with gaps read as the list with 0
// in the gaps. Max is at least 0, as report's column was (a maximum from 0).
func TestPerRankIsTheList(t *testing.T) {
	for _, v := range [][]int64{nil, {}, {7}, {1, 1, 2, 2, 2, 1}, {3, 3, 3}, {-1, -2}, {0, 5, 0, 5}} {
		c := PerRankOf(v)
		if got := c.Values(); !reflect.DeepEqual(got, v) && !(len(v) == 0 && len(got) == 0 && (v == nil) == (got == nil)) {
			t.Errorf("%v: values %v", v, got)
		}
		if c.Len() != len(v) {
			t.Errorf("%v: Len %d", v, c.Len())
		}
		var m int64
		for r, x := range v {
			if c.At(r) != x {
				t.Errorf("%v: At(%d) = %d", v, r, c.At(r))
			}
			m = max(m, x)
		}
		if c.Max() != m {
			t.Errorf("%v: Max %d, want %d", v, c.Max(), m)
		}
		got, _ := json.Marshal(c)
		want, _ := json.Marshal(v)
		if !bytes.Equal(got, want) {
			t.Errorf("%v: JSON %s, want %s", v, got, want)
		}
		var back PerRank
		if err := json.Unmarshal(got, &back); err != nil || !back.Equal(c) || !reflect.DeepEqual(back, c) {
			t.Errorf("%v: read back %+v (%v), want %+v", v, back, err, c)
		}
		for _, d := range []int{1, 3} {
			rep := []int64{} // made, as v is unless nil
			for range d {
				rep = append(rep, v...)
			}
			if v == nil {
				rep = nil
			}
			if r := c.Repeat(d); !reflect.DeepEqual(r, PerRankOf(rep)) {
				t.Errorf("%v: Repeat(%d) = %+v, want %+v", v, d, r, PerRankOf(rep))
			}
		}
	}
	// Ranks 4–5 = 2, 0–1 = 1, added in that order; 2–3 and 6 left out.
	var b perRankBuilder
	b.add(4, 2, 2)
	b.add(0, 2, 1)
	c := b.done(7)
	if want := []int64{1, 1, 0, 0, 2, 2, 0}; !slices.Equal(c.Values(), want) || len(c.runs) != 4 {
		t.Errorf("built %v in %d runs, want %v in 4", c.Values(), len(c.runs), want)
	}
}
