package calib

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
)

// TestOpGapPerOp: 10 passes of 28 ops in 2.000 ms of wall time whose op
// timers observed 1.944 ms leave 56 µs outside them: 56 µs / 280 ops =
// 200 ns per op. Timers holding more than the wall (clock reads
// overlapping) leave no gap, and no ops none either.
func TestOpGapPerOp(t *testing.T) {
	if got := opGapPerOp(2.000e-3, 1.944e-3, 280); math.Abs(got-200e-9) > 1e-15 {
		t.Errorf("gap %g s per op; want 200 ns", got)
	}
	if got := opGapPerOp(1e-3, 1.1e-3, 10); got != 0 {
		t.Errorf("timers beyond the wall: gap %g; want 0", got)
	}
	if got := opGapPerOp(1e-3, 0, 0); got != 0 {
		t.Errorf("no ops: gap %g; want 0", got)
	}
}

// TestOpGapEntry: repeats 120, 90 and 150 ns → the median 120 ns, spread
// 90–150, one entry of kind op_gap at shape host, size 1, one rank; a
// repeat that read no gap is kept at 1 ns; no repeats, no entry.
func TestOpGapEntry(t *testing.T) {
	e, ok := opGapEntry([]float64{120e-9, 90e-9, 150e-9})
	want := configs.OpTime{Kind: configs.OpGapKind, Shape: configs.OpGapShape, Size: 1, TimeS: 120e-9, TimeMinS: 90e-9, TimeMaxS: 150e-9, Samples: 3, Ranks: 1}
	if !ok || e.Kind != want.Kind || e.Shape != want.Shape || e.Size != 1 || e.Ranks != 1 || e.Samples != 3 ||
		math.Abs(e.TimeS-want.TimeS) > 1e-18 || math.Abs(e.TimeMinS-want.TimeMinS) > 1e-18 || math.Abs(e.TimeMaxS-want.TimeMaxS) > 1e-18 {
		t.Errorf("entry %+v, %v; want %+v", e, ok, want)
	}
	if err := configs.ValidateOpTimes("op_time", []configs.OpTime{e}); err != nil {
		t.Errorf("entry does not validate: %v", err)
	}
	e, ok = opGapEntry([]float64{0, 0, 40e-9})
	if !ok || e.TimeS != noWaitS || e.TimeMinS != noWaitS || math.Abs(e.TimeMaxS-40e-9) > 1e-18 {
		t.Errorf("no gap read: %+v, %v; want 1 ns (1 ns–40 ns)", e, ok)
	}
	if _, ok := opGapEntry(nil); ok {
		t.Error("no repeats: an entry")
	}
}

// TestMeasureOpGap runs the measurement briefly: one value per repeat,
// each finite and not negative (its size is the host's; no timing is
// asserted).
func TestMeasureOpGap(t *testing.T) {
	gaps, err := measureOpGap(context.Background(), 3, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 3 {
		t.Fatalf("%d repeats; want 3", len(gaps))
	}
	for i, g := range gaps {
		if g < 0 || math.IsNaN(g) || math.IsInf(g, 0) {
			t.Errorf("repeat %d: gap %g", i, g)
		}
	}
	t.Logf("op gap per repeat: %v s", gaps)
}
