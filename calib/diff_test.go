package calib

import (
	"math"
	"testing"
)

// Two calibrations side by side, furthest apart first: b's FLOP rate 3×
// a's, its link latency a third, its core wait at 6400 ns read against
// a's curve there (a: 4 µs at 6000 ns, 12 µs at 24000 ns on a power law,
// 4·3^(ln(6400/6000)/ln 4) = 4.1442 µs) at 1 µs, and so on.
func TestDiff(t *testing.T) {
	a := mergeInput(1e10, 3e-5, 4e-6, 6000, 6754, 2e-4)
	b := mergeInput(3e10, 1e-5, 1e-6, 6400, 6473, 3e-4)
	b.OpTimes = b.OpTimes[:3] // no exit lags in b
	rows := Diff(a, b)
	at := map[string]DiffRow{}
	for _, r := range rows {
		at[r.Figure] = r
	}
	aWait := 4e-6 * math.Pow(3, math.Log(6400.0/6000)/math.Log(4))
	for _, w := range []DiffRow{
		{Figure: "hardware.fp32_flops_per_s", A: 1e10, B: 3e10, Ratio: 3},
		{Figure: "topology.intra_node.latency_s", A: 3e-5, B: 1e-5, Ratio: 1.0 / 3},
		{Figure: "spread.fp32_flops_per_s.median", A: 1e10, B: 3e10, Ratio: 3},
		{Figure: `op_time core_wait [cores=2] at 4 ranks, size 6400`, A: aWait, B: 1e-6, Ratio: 1e-6 / aWait},
	} {
		r, ok := at[w.Figure]
		if !ok || math.Abs(r.A-w.A) > 1e-9*math.Abs(w.A) || r.B != w.B || math.Abs(r.Ratio-w.Ratio) > 1e-9*w.Ratio {
			t.Errorf("%s: %+v, want %+v", w.Figure, r, w)
		}
	}
	if _, ok := at["op_time gemm [m=1 n=64 k=64] at 1 ranks, size 1"]; ok {
		t.Error("an equal entry listed")
	}
	// Furthest first: the core wait after 6400 ns (×0.24, |ln| 1.42)
	// before the FLOP rate (×3, |ln| 1.10); the exit lags, a's only, last.
	if rows[0].Figure != `op_time core_wait [cores=2] at 4 ranks, size 6400` {
		t.Errorf("first row %+v", rows[0])
	}
	if last := rows[len(rows)-1]; last.Only != "A" || last.Figure != "op_time core_exit_lag [cores=2] at 4 ranks" {
		t.Errorf("last row %+v", last)
	}
}
