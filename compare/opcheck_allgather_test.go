package compare

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// TestOpCheckAllGatherFromTable: tp4-tiny's logits all_gather (1536 B over
// its 4 ranks, once in the prefill and once a decode step) with a profile
// entry of 7 µs at that size and group, and an op gap of 0.1 µs (which the
// op check takes off compute ops priced from the table only): the
// all_gather rows read the entry's 7 µs per pass, priced from the table
// (1 table op, 0 by the link model per rank and pass), against measured
// 3.5 µs in the prefill (ratio 2) and 3 µs over an iteration's 3 decode
// steps, 1 µs a step (ratio 7). Without the entry the same rows count 1
// op by the link model and none from the table.
func TestOpCheckAllGatherFromTable(t *testing.T) {
	cfg, err := configs.Load("test/tp4-tiny")
	if err != nil {
		t.Fatal(err)
	}
	const tag, gap = 7e-6, 0.1e-6
	entry := func(kind, shape string, size int64, v float64) configs.OpTime {
		return configs.OpTime{Kind: kind, Shape: shape, Size: size, TimeS: v, TimeMinS: v, TimeMaxS: v, Samples: 1, Ranks: 4}
	}
	var m exec.Measurement
	for r := 0; r < 4; r++ {
		m.Ranks = append(m.Ranks, exec.RankResult{Rank: r, StepEndS: [][]float64{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}},
			PhaseBusyS: map[string]map[string][]float64{"prefill": {"all_gather": {3.5e-6, 3.5e-6, 3.5e-6}}, "decode": {"all_gather": {3e-6, 3e-6, 3e-6}}}})
	}
	for _, c := range []struct {
		name        string
		times       []configs.OpTime
		table, roof int
	}{
		{"with the entry", []configs.OpTime{entry("all_gather", "ranks=4", 1536, tag), entry(configs.OpGapKind, configs.OpGapShape, 1, gap)}, 1, 0},
		{"without", []configs.OpTime{entry(configs.OpGapKind, configs.OpGapShape, 1, gap)}, 0, 1},
	} {
		c2 := *cfg
		c2.Hardware.OpTimes = c.times
		plan, err := partition.NewPlan(&c2)
		if err != nil {
			t.Fatal(err)
		}
		est, err := sim.EstimatePlan(plan, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, r := range OpCheck(&m, est) {
			if r.Kind != "all_gather" {
				continue
			}
			found++
			if r.TableOps != c.table || r.RooflineOps != c.roof || r.Ranks != 4 {
				t.Errorf("%s: %s all_gather: %d table, %d link-model ops over %d ranks; want %d, %d over 4", c.name, r.Phase, r.TableOps, r.RooflineOps, r.Ranks, c.table, c.roof)
			}
			if c.table == 0 {
				continue
			}
			meas := map[string]float64{"prefill": 3.5e-6, "decode": 1e-6}[r.Phase]
			if math.Abs(r.ModeledS-tag) > 1e-12 || math.Abs(r.MeasuredS-meas) > 1e-12 || math.Abs(r.Ratio-tag/meas) > 1e-9 {
				t.Errorf("%s: %s all_gather modeled %g, measured %g, ratio %g; want 7 µs, %g, %g", c.name, r.Phase, r.ModeledS, r.MeasuredS, r.Ratio, meas, tag/meas)
			}
		}
		if found != 2 {
			t.Errorf("%s: %d all_gather rows, want prefill and decode", c.name, found)
		}
	}
}
