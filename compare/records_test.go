package compare

import (
	"math"
	"reflect"
	"testing"
)

func TestMatchRecords(t *testing.T) {
	a := []Record{{"x", []Metric{{"ttft_s", "s", 2}, {"bytes", "B", 0}}}, {"only-a", []Metric{{"ttft_s", "s", 1}}}}
	b := []Record{{"y", []Metric{{"ttft_s", "s", 1}}}, {"x", []Metric{{"bytes", "B", 0}, {"ttft_s", "s", 1.5}}}}
	rows, unmatched := MatchRecords([]string{"a.json", "b.json"}, [][]Record{a, b})
	// Rows follow the first appearance of each key (x, only-a, y) and the
	// first file holding the key for its metrics; x's metrics in b are in
	// another order and are found by name.
	var keys []string
	for _, r := range rows {
		keys = append(keys, r.Key+"/"+r.Metric)
	}
	if want := []string{"x/ttft_s", "x/bytes", "only-a/ttft_s", "y/ttft_s"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("rows %v, want %v", keys, want)
	}
	// Hand-computed (b − a)/a: x ttft (1.5 − 2)/2 = −25 %; bytes 0 → 0: 0.
	if d := rows[0].RelDiff[1]; d == nil || math.Abs(*d+0.25) > 1e-15 {
		t.Errorf("x ttft: %v, want -0.25", d)
	}
	if d := rows[1].RelDiff[1]; d == nil || *d != 0 {
		t.Errorf("x bytes 0 → 0: %v, want 0", d)
	}
	// A record one file lacks has no value there and no difference; y's
	// baseline value is missing, so it has none either.
	if r := rows[2]; r.Values[1] != nil || r.RelDiff[1] != nil {
		t.Errorf("only-a in b: %+v", r)
	}
	if r := rows[3]; r.Values[0] != nil || r.Values[1] == nil || *r.Values[1] != 1 || r.RelDiff[1] != nil {
		t.Errorf("y: %+v", r)
	}
	if want := []string{"only-a: not in b.json", "y: not in a.json"}; !reflect.DeepEqual(unmatched, want) {
		t.Errorf("unmatched %q, want %q", unmatched, want)
	}
	// A zero baseline with a non-zero value has no relative difference.
	zero, three := 0.0, 3.0
	if d := relDiff(&zero, &three); d != nil {
		t.Errorf("0 → 3: %v", *d)
	}
}
