package topology

import (
	"math"
	"strings"
	"testing"
)

func fullTuning() *CollectiveTuning {
	v := func(x float64) *float64 { return &x }
	return &CollectiveTuning{RampSimpleS: v(80e-6), RampSimpleHalfBytes: v(32 << 20), RampLLS: v(20e-6),
		RampLLHalfBytes: v(1 << 20), NVLSBaseS: v(6.5e-6), NVLSPerRankS: v(3e-6)}
}

func TestCollectiveTuningValidate(t *testing.T) {
	if err := (*CollectiveTuning)(nil).Validate("topology.collectives"); err != nil {
		t.Errorf("no section: %v", err)
	}
	if err := fullTuning().Validate("topology.collectives"); err != nil || !fullTuning().Complete() {
		t.Errorf("full section: %v, complete %v", err, fullTuning().Complete())
	}
	if (*CollectiveTuning)(nil).Complete() {
		t.Error("no section is complete")
	}
	for _, c := range []struct {
		name string
		edit func(c *CollectiveTuning)
		want string
	}{
		{"missing", func(c *CollectiveTuning) { c.NVLSPerRankS = nil }, "topology.collectives.nvls_per_rank_s: missing"},
		{"negative", func(c *CollectiveTuning) { *c.RampLLS = -1e-6 }, "topology.collectives.ramp_ll_s: must be in [0, 1] seconds (got -1e-06)"},
		{"NaN", func(c *CollectiveTuning) { *c.NVLSBaseS = math.NaN() }, "topology.collectives.nvls_base_s: must be a finite number"},
		{"zero half", func(c *CollectiveTuning) { *c.RampSimpleHalfBytes = 0 }, "topology.collectives.ramp_simple_half_bytes: must be in [1, 2^40] bytes (got 0)"},
	} {
		tu := fullTuning()
		c.edit(tu)
		if c.name == "missing" && tu.Complete() {
			t.Error("a section without nvls_per_rank_s is complete")
		}
		err := tu.Validate("topology.collectives")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	// A topology validates its section under its own path.
	topo := Topology{Name: "t", Nodes: 1, GPUsPerNode: 1, Collectives: fullTuning()}
	topo.Collectives.RampLLS = nil
	if err := topo.Validate("topology"); err == nil || !strings.Contains(err.Error(), "topology.collectives.ramp_ll_s: missing") {
		t.Errorf("topology with a partial section: %v", err)
	}
}
