//go:build unix

package calib

import (
	"context"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// Two ranks' tables merge into one entry per key: gemm 2 µs (1.5–3) and
// 4 µs (3–6) → mean 3 µs, extremes 1.5 and 6 µs, 10 samples, Ranks 2;
// attention, only rank 1's, keeps its 9 µs (8–10). The ranks' stretches
// do not enter. The entries come out sorted by kind, shape, size and
// context.
func TestMergeOpTimes(t *testing.T) {
	g := func(ts, lo, hi float64) configs.OpTime {
		return configs.OpTime{Kind: "gemm", Shape: "n=64 k=64 bias=false", Size: 4, TimeS: ts, TimeMinS: lo, TimeMaxS: hi, Samples: 5, Ranks: 1}
	}
	a := configs.OpTime{Kind: "attention", Shape: "x", Size: 1, Context: 22, TimeS: 9e-6, TimeMinS: 8e-6, TimeMaxS: 1e-5, Samples: 5, Ranks: 1}
	ranks := []rankOpTimes{{Stretch: 3, Times: []configs.OpTime{g(2e-6, 1.5e-6, 3e-6)}}, {Stretch: 1.5, Times: []configs.OpTime{g(4e-6, 3e-6, 6e-6), a}}}
	got := mergeOpTimes(ranks, 2)
	want := []configs.OpTime{
		{Kind: "attention", Shape: "x", Size: 1, Context: 22, TimeS: 9e-6, TimeMinS: 8e-6, TimeMaxS: 1e-5, Samples: 5, Ranks: 2},
		{Kind: "gemm", Shape: "n=64 k=64 bias=false", Size: 4, TimeS: 3e-6, TimeMinS: 1.5e-6, TimeMaxS: 6e-6, Samples: 10, Ranks: 2},
	}
	if !opTimesNear(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// opTimesNear: the same entries, times within 1e-12 relative.
func opTimesNear(a, b []configs.OpTime) bool {
	if len(a) != len(b) {
		return false
	}
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*math.Abs(y) }
	for i := range a {
		x, y := a[i], b[i]
		if !near(x.TimeS, y.TimeS) || !near(x.TimeMinS, y.TimeMinS) || !near(x.TimeMaxS, y.TimeMaxS) {
			return false
		}
		x.TimeS, x.TimeMinS, x.TimeMaxS = y.TimeS, y.TimeMinS, y.TimeMaxS
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// Each rank's line is found behind the launcher's prefix; a line that is
// not JSON is an error naming the op times.
func TestParseOpTimesLines(t *testing.T) {
	in := "[rank 0] partbench-op-times {\"stretch\":2.5,\"times\":[{\"kind\":\"gemm\",\"shape\":\"s\",\"size\":4,\"time_s\":1e-6,\"time_min_s\":1e-6,\"time_max_s\":1e-6,\"samples\":1,\"ranks\":1}]}\n" +
		"[rank 1] something else\n[rank 1] partbench-op-times {\"stretch\":0,\"times\":[]}\n"
	got, err := parseOpTimesLines(strings.NewReader(in))
	if err != nil || len(got) != 2 || len(got[0].Times) != 1 || got[0].Times[0].TimeS != 1e-6 || got[0].Stretch != 2.5 || len(got[1].Times) != 0 {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := parseOpTimesLines(strings.NewReader("[rank 0] partbench-op-times {\n")); err == nil || !strings.Contains(err.Error(), "op times") {
		t.Fatalf("bad line: %v", err)
	}
}

// Two process ranks time single-tiny's Programs at once: every compute op
// has an entry, measured at 2 ranks, with the samples of both, and each
// rank reports the stretch it ran at (wall over CPU time: at least about 1,
// less only by the clocks' granularity).
func TestMeasureOpTimesProcs(t *testing.T) {
	ts, stretches, err := measureOpTimesProcs(context.Background(), []string{os.Args[0], "-test.run=^$"}, 2, []string{"test/single-tiny"}, 2, time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range stretches {
		if !(s > 0.5) {
			t.Errorf("rank %d: stretch %g, want about 1 or more", i, s)
		}
	}
	tab, plan := opTableOnSingleTiny(t, ts)
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

// One worker reads the stretch it ran at (wall over CPU time, about 1 or
// more); two workers of one process share its CPU time, so none is read
// (0). Timed on the core, every entry is positive and at most its wall
// time's order: below 1 s.
func TestOpTimesStretch(t *testing.T) {
	plans, err := opPlans([]string{"test/single-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    int
		read bool
	}{{1, true}, {2, false}} {
		s := -1.0
		if _, err := measureOpTimesBlocks(context.Background(), plans, c.n, 2, blockOpts{minBlock: time.Millisecond, stretch: &s}, nil, nil, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		if c.read && !(s > 0.5) || !c.read && s != 0 {
			t.Errorf("%d workers: stretch %g", c.n, s)
		}
	}
}

// On the core (one worker held on its thread, Linux): every compute op
// of single-tiny's Programs has an entry, each positive and below 1 s.
func TestOpTimesOnCore(t *testing.T) {
	if _, ok := threadCPU(); !ok {
		t.Skip("no thread CPU clock on this host: op times stay wall times")
	}
	plans, err := opPlans([]string{"test/single-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := measureOpTimesBlocks(context.Background(), plans, 1, 2, blockOpts{onCore: true}, nil, nil, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	tab, plan := opTableOnSingleTiny(t, ts)
	for _, op := range plan.Program(0, partition.Prefill).Ops {
		if v, ok := tab.Time(&op); !ok || !(v > 0 && v < 1) {
			t.Errorf("prefill %s (%s): %g s, %v", op.Name, op.Kind, v, ok)
		}
	}
}
