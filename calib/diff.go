package calib

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/partbench/partbench/configs"
)

// DiffRow is one figure of two calibrations side by side: A's and B's
// value and B over A. An op_time entry is B's at B's point against A's
// curve read there (as Merge reads it); A and B zero both where the
// figure is in one calibration only (Only names which).
type DiffRow struct {
	Figure string  `json:"figure"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	Ratio  float64 `json:"b_over_a"`
	Only   string  `json:"only,omitempty"`
}

// Diff sets two calibrations' figures side by side — every numeric field
// of the hardware and the link, every spread's median, every op_time entry
// — ordered by how far B is from A (|ln B/A|, largest first; figures in
// one calibration only last). Where one calibration's op times move a
// config's modeled time and another's do not, the rows at the top say
// which entries did it (docs/calibration.md, "Two calibrations compared").
func Diff(a, b *configs.Calibration) []DiffRow {
	var rows []DiffRow
	add := func(name string, x, y float64) {
		if x == y {
			return
		}
		r := DiffRow{Figure: name, A: x, B: y, Ratio: math.NaN()}
		if x != 0 {
			r.Ratio = y / x
		}
		rows = append(rows, r)
	}
	numericDiff(reflect.ValueOf(a.Hardware), reflect.ValueOf(b.Hardware), "hardware", add)
	numericDiff(reflect.ValueOf(a.Topology), reflect.ValueOf(b.Topology), "topology", add)
	for _, k := range slices.Sorted(mapKeysOf(a.Spread, b.Spread)) {
		sa, okA := a.Spread[k]
		sb, okB := b.Spread[k]
		if okA && okB {
			add("spread."+k+".median", sa.Median, sb.Median)
		}
	}
	groups := func(c *configs.Calibration) map[opGroup][]configs.OpTime {
		m := map[opGroup][]configs.OpTime{}
		for _, t := range c.OpTimes {
			g := opGroup{t.Kind, t.Shape, t.Ranks}
			m[g] = append(m[g], t)
		}
		return m
	}
	ga, gb := groups(a), groups(b)
	var only []DiffRow
	for _, g := range slices.SortedFunc(mapKeysOf(ga, gb), func(x, y opGroup) int {
		return cmp.Or(cmp.Compare(x.kind, y.kind), cmp.Compare(x.shape, y.shape), cmp.Compare(x.ranks, y.ranks))
	}) {
		name := fmt.Sprintf("op_time %s [%s] at %d ranks", g.kind, g.shape, g.ranks)
		switch {
		case ga[g] == nil:
			only = append(only, DiffRow{Figure: name, Only: "B"})
		case gb[g] == nil:
			only = append(only, DiffRow{Figure: name, Only: "A"})
		default:
			curve := curveOf(ga[g])
			for _, e := range gb[g] {
				_, v := curve(e.Size, e.Context)
				at := fmt.Sprintf(", size %d", e.Size)
				if e.Context != 0 {
					at += fmt.Sprintf(" context %d", e.Context)
				}
				add(name+at, v, e.TimeS)
			}
		}
	}
	far := func(r DiffRow) float64 {
		if math.IsNaN(r.Ratio) || r.Ratio <= 0 {
			return math.Inf(1)
		}
		return math.Abs(math.Log(r.Ratio))
	}
	slices.SortStableFunc(rows, func(x, y DiffRow) int { return cmp.Compare(far(y), far(x)) })
	return append(rows, only...)
}

// numericDiff calls add for every float64 or integer field of two structs
// of one type (nested structs walked, named by their TOML keys).
func numericDiff(a, b reflect.Value, path string, add func(string, float64, float64)) {
	switch a.Kind() {
	case reflect.Struct:
		t := a.Type()
		for i := range t.NumField() {
			numericDiff(a.Field(i), b.Field(i), path+"."+tomlName(t.Field(i)), add)
		}
	case reflect.Float64:
		add(path, a.Float(), b.Float())
	case reflect.Int, reflect.Int64:
		add(path, float64(a.Int()), float64(b.Int()))
	}
}

// mapKeysOf is the keys of two maps of one key type, each once.
func mapKeysOf[K comparable, V any](a, b map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, dup := a[k]; !dup && !yield(k) {
				return
			}
		}
	}
}
