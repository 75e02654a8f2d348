package compare_test

import (
	"testing"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/sim"
)

// Every rank's working set is probed once through the given probe; without
// a probe nothing is measured.
func TestL2ProbesEachRanksWorkingSet(t *testing.T) {
	e, err := sim.EstimatePlan(tinyPlan(t), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var asked []int64
	st := compare.L2(e, func(b int64) calib.Reuse { asked = append(asked, b); return calib.Reuse{MeasuredBytes: b} }, 0)
	if len(st.Ranks) != e.Ranks.Len() || len(asked) != e.Ranks.Len() || st.L2 != e.L2 {
		t.Fatalf("%d ranks, %d probes, for %d ranks", len(st.Ranks), len(asked), e.Ranks.Len())
	}
	for i, r := range st.Ranks {
		if w, _ := e.Ranks.Row(i); r.WorkingSetBytes != w.L2WorkingSetBytes || asked[i] != r.WorkingSetBytes || r.Measured == nil || r.Measured.MeasuredBytes != asked[i] || r.ImpliedResidency != nil {
			t.Errorf("rank %d: %+v", i, r)
		}
	}
	for _, r := range compare.L2(e, nil, 1e12).Ranks {
		if r.Measured != nil || r.ImpliedResidency != nil {
			t.Errorf("unprobed rank %d measured", r.Rank)
		}
	}
}
