package nccltests

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		min, max, f, i int64
		want           []int64
	}{
		// -b 8 -e 128 -f 2: 8, 16, 32, 64, 128 (all_reduce_perf's doubling).
		{8, 128, 2, 0, []int64{8, 16, 32, 64, 128}},
		// -f 4 stops before passing -e: 1K, 4K, 16K (64K > 20K).
		{1024, 20 * 1024, 4, 0, []int64{1024, 4096, 16384}},
		// -f 1 -i 1M from 1M to 3M: 1M, 2M, 3M.
		{1 << 20, 3 << 20, 1, 1 << 20, []int64{1 << 20, 2 << 20, 3 << 20}},
		// -b = -e: one size whatever the step.
		{32 << 20, 32 << 20, 2, 0, []int64{32 << 20}},
	} {
		got, err := Sizes(tc.min, tc.max, tc.f, tc.i)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Sizes(%d, %d, %d, %d) = %v, %v; want %v", tc.min, tc.max, tc.f, tc.i, got, err, tc.want)
		}
	}
	for _, bad := range [][4]int64{{16, 8, 2, 0}, {8, 16, 0, 0}, {8, 16, 1, 0}, {0, 16, 2, 0}, {0, 1 << 40, 1, 1}} {
		if _, err := Sizes(bad[0], bad[1], bad[2], bad[3]); err == nil {
			t.Errorf("Sizes%v: want an error", bad)
		}
	}
}

func TestRedopAndColumns(t *testing.T) {
	if r, err := Redop("MAX"); err != nil || r != "max" {
		t.Errorf("Redop(MAX) = %q, %v", r, err)
	}
	if _, err := Redop("all_reduce"); err == nil {
		t.Error("Redop(all_reduce): want an error pointing at the argument")
	}
	for _, tc := range []struct {
		op   commcount.Op
		red  string
		root int
	}{{commcount.AllReduce, "sum", -1}, {commcount.AllGather, "none", -1}, {commcount.Broadcast, "none", 0}, {commcount.Reduce, "sum", 0}} {
		if red, root := Columns(tc.op, "sum"); red != tc.red || root != tc.root {
			t.Errorf("Columns(%s) = %s, %d; want %s, %d", tc.op, red, root, tc.red, tc.root)
		}
	}
}

func TestResolve(t *testing.T) {
	parse := func(s string) (int64, error) { // a stand-in for sim.ParseSize: "1K" = 1024, else bytes
		if s == "1K" {
			return 1024, nil
		}
		var v int64
		_, err := fmt.Sscan(s, &v)
		return v, err
	}
	r, err := Range{MinBytes: "1K", MaxBytes: "4096", StepBytes: "0", StepFactor: 2}.Resolve(parse, nil)
	if err != nil || !reflect.DeepEqual(r.Sizes, []int64{1024, 2048, 4096}) || r.MinBytes != 1024 || r.MaxBytes != 4096 {
		t.Errorf("Resolve = %+v, %v", r, err)
	}
	if _, err := (Range{MinBytes: "x", MaxBytes: "1", StepFactor: 2}).Resolve(parse, nil); err == nil || !strings.HasPrefix(err.Error(), "-b/--minbytes: ") {
		t.Errorf("bad -b: %v", err)
	}
	r, err = Range{Sizes: "8:32"}.Resolve(parse, func(string) ([]int64, error) { return []int64{8, 16, 32}, nil })
	if err != nil || r.MinBytes != 8 || r.MaxBytes != 32 || r.StepFactor != 2 {
		t.Errorf("--sizes: %+v %v", r, err)
	}
}
