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

// pricedLayouts prices every fitting candidate of spec, in search order,
// through one QuickCache and returns the cache with a plan of each layout
// it priced (the last one of the layout).
func pricedLayouts(t testing.TB, spec SearchSpec) (*QuickCache, map[proxyKey]*partition.Plan) {
	t.Helper()
	c := NewQuickCache(spec.Collectives)
	c.keepChunks = true // the tests of stage shapes read every chunk
	c.keepOps = true    // and every layer op
	plans := map[proxyKey]*partition.Plan{}
	eachFittingPlan(spec, func(p *partition.Plan) {
		if _, err := c.Quick(p); err != nil {
			t.Fatal(err)
		}
		plans[layoutOf(p)] = p
	})
	return c, plans
}
