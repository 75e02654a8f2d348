package sim

import (
	"testing"

	"github.com/partbench/partbench/partition"
)

// syntheticSpec is SyntheticSearchSpec(gpus), or the test's end.
func syntheticSpec(t testing.TB, gpus int) SearchSpec {
	t.Helper()
	spec, err := SyntheticSearchSpec(gpus)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// eachFittingPlan calls each, in search order, with the plan of every
// candidate of spec that fits (its stages planned as NewPlanStages plans
// them; a candidate that does not fit is left out), as the quick tests walk
// a search.
func eachFittingPlan(spec SearchSpec, each func(p *partition.Plan)) {
	cands, _ := spec.Enumerate()
	for _, cand := range cands {
		p, err := partition.NewPlanStages(spec.CandidateConfig(cand))
		if err != nil {
			continue // does not fit
		}
		each(p)
	}
}
