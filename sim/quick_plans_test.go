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

// quickSpec is a synthetic search a quick test walks, with its GPU count.
type quickSpec struct {
	gpus int
	spec SearchSpec
}

// quickSpecs are the searches the quick tests hold their caches to: the
// synthetic search at 1,024, 4,096 and 16,384 GPUs, and at 16,384 GPUs with
// batch 16 and context 512.
func quickSpecs(t testing.TB) []quickSpec {
	var out []quickSpec
	for _, gpus := range []int{1024, 4096, 16384} {
		out = append(out, quickSpec{gpus, syntheticSpec(t, gpus)})
	}
	small := syntheticSpec(t, 16384)
	small.Config.Workload.Batch, small.Config.Workload.Context = 16, 512
	return append(out, quickSpec{16384, small})
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
