package calib

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

// TestReplicaSpreadEntries: ten blocks (ms) 1.0, 1.1, 1.0, 1.2, 1.0, 1.5,
// 1.0, 1.3, 1.0, 1.1, sorted 1.0 ×5, 1.1 ×2, 1.2, 1.3, 1.5. partbench's
// quantile (stats.Percentile) is the smallest block with at least a
// fraction p at or below it: the median (p = 0.5) is the 5th, 1.0 ms; R = 2
// takes p = 0.5^(1/2) = 0.7071 → the 8th (8/10 ≥ 0.7071 > 7/10), 1.2 ms,
// ×1.2; R = 4 p = 0.8409 → the 9th, 1.3 ms, ×1.3; R = 8 p = 0.9170 → the
// 10th, 1.5 ms, ×1.5. At 4 ranks (two pairs) only R = 2; at 16 R = 2, 4, 8.
// Every entry at size 1 ms (1,000,000 ns), context R, shape cores=2.
func TestReplicaSpreadEntries(t *testing.T) {
	ms := []float64{1.0, 1.1, 1.0, 1.2, 1.0, 1.5, 1.0, 1.3, 1.0, 1.1}
	blocks := make([]float64, len(ms))
	for i, m := range ms {
		blocks[i] = m * 1e-3
	}
	for _, c := range []struct {
		n    int
		want map[int64]float64
	}{
		{4, map[int64]float64{2: 1.2}},
		{16, map[int64]float64{2: 1.2, 4: 1.3, 8: 1.5}},
	} {
		es, err := replicaSpreadEntries(blocks, c.n, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != len(c.want) {
			t.Fatalf("%d ranks: %d entries %+v, want %d", c.n, len(es), es, len(c.want))
		}
		for _, e := range es {
			w, ok := c.want[e.Context]
			if !ok || math.Abs(e.TimeS-w) > 1e-9 || e.Kind != configs.ReplicaSpreadKind || e.Shape != "cores=2" || e.Size != 1_000_000 ||
				e.Ranks != c.n || e.Samples != 10 || e.TimeMinS != e.TimeS || e.TimeMaxS != e.TimeS {
				t.Errorf("%d ranks: entry %+v, want ×%g at R = %d", c.n, e, w, e.Context)
			}
		}
		if err := configs.ValidateOpTimes("op_time", es); err != nil {
			t.Errorf("%d ranks: entries do not validate: %v", c.n, err)
		}
	}
	for _, bad := range [][]float64{{1e-3}, {1e-3, 0}, {1e-3, math.NaN()}} {
		if _, err := replicaSpreadEntries(bad, 4, 2); err == nil || !strings.Contains(err.Error(), "block") {
			t.Errorf("blocks %v: error %v, want one naming the blocks", bad, err)
		}
	}
}

// The spread is measured where the core wait is, with two pairs or more.
func TestReplicaSpreadCounts(t *testing.T) {
	got := replicaSpreadCounts(Options{Ranks: 2, OpRanks: []int{1, 2, 4, 16}}, 2)
	if len(got) != 2 || got[0] != 4 || got[1] != 16 {
		t.Errorf("counts %v, want [4 16]", got)
	}
}
