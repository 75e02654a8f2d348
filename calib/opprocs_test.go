//go:build unix

package calib

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// Two ranks' tables merge into one entry per key: gemm 2 µs (1.5–3) and
// 4 µs (3–6) → mean 3 µs, extremes 1.5 and 6 µs, 10 samples, Ranks 2; an
// entry only one rank has keeps its time; the entries come out sorted by
// kind, shape, size and context.
func TestMergeOpTimes(t *testing.T) {
	g := func(ts, lo, hi float64) configs.OpTime {
		return configs.OpTime{Kind: "gemm", Shape: "n=64 k=64 bias=false", Size: 4, TimeS: ts, TimeMinS: lo, TimeMaxS: hi, Samples: 5, Ranks: 1}
	}
	a := configs.OpTime{Kind: "attention", Shape: "x", Size: 1, Context: 22, TimeS: 9e-6, TimeMinS: 8e-6, TimeMaxS: 1e-5, Samples: 5, Ranks: 1}
	got := mergeOpTimes([][]configs.OpTime{{g(2e-6, 1.5e-6, 3e-6)}, {g(4e-6, 3e-6, 6e-6), a}}, 2)
	want := []configs.OpTime{
		{Kind: "attention", Shape: "x", Size: 1, Context: 22, TimeS: 9e-6, TimeMinS: 8e-6, TimeMaxS: 1e-5, Samples: 5, Ranks: 2},
		{Kind: "gemm", Shape: "n=64 k=64 bias=false", Size: 4, TimeS: 3e-6, TimeMinS: 1.5e-6, TimeMaxS: 6e-6, Samples: 10, Ranks: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// Each rank's line is found behind the launcher's prefix; a line that is
// not JSON is an error naming the op times.
func TestParseOpTimesLines(t *testing.T) {
	in := "[rank 0] partbench-op-times [{\"kind\":\"gemm\",\"shape\":\"s\",\"size\":4,\"time_s\":1e-6,\"time_min_s\":1e-6,\"time_max_s\":1e-6,\"samples\":1,\"ranks\":1}]\n" +
		"[rank 1] something else\n[rank 1] partbench-op-times []\n"
	got, err := parseOpTimesLines(strings.NewReader(in))
	if err != nil || len(got) != 2 || len(got[0]) != 1 || got[0][0].TimeS != 1e-6 || len(got[1]) != 0 {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := parseOpTimesLines(strings.NewReader("[rank 0] partbench-op-times {\n")); err == nil || !strings.Contains(err.Error(), "op times") {
		t.Fatalf("bad line: %v", err)
	}
}

// Two process ranks time single-tiny's Programs at once: every compute op
// has an entry, measured at 2 ranks, with the samples of both.
func TestMeasureOpTimesProcs(t *testing.T) {
	ts, err := measureOpTimesProcs(context.Background(), []string{os.Args[0], "-test.run=^$"}, 2, []string{"test/single-tiny"}, 2, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := configs.ValidateOpTimes("op_time", ts); err != nil {
		t.Fatal(err)
	}
	tab := sim.NewOpTable(ts)
	cfg, _ := configs.Load("test/single-tiny")
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range plan.Program(0, partition.Prefill).Ops {
		if _, ok := tab.Time(&op); !ok {
			t.Errorf("prefill %s (%s): no entry", op.Name, op.Kind)
		}
	}
	for _, e := range ts {
		if e.Ranks != 2 || e.Samples < 4 { // 2 blocks × 2 ranks, at least one op each
			t.Fatalf("entry %+v: want ranks 2 and ≥ 4 samples", e)
		}
	}
}
