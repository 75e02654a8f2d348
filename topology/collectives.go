package topology

import (
	"fmt"
	"math"
	"strings"
)

// CollectiveTuning replaces the collective model's fitted constants for one
// system (docs/collectives.md, "Ramp" and "NVLS"; the defaults and their
// sources are in sim). A system's NCCL version, driver and fabric move
// them, so `partbench collectives --measured FILE --fit` fits them to the
// system's own nccl-tests runs and prints this section. When the section is
// present every key must be: a partly written one is refused, not completed.
type CollectiveTuning struct {
	// The pipeline ramp R·S/(S + S½) added to a collective's latency, for
	// the Simple protocol (ring, tree, NVLS, hierarchical) and for LL/LL128.
	RampSimpleS         *float64 `toml:"ramp_simple_s" json:"ramp_simple_s"`
	RampSimpleHalfBytes *float64 `toml:"ramp_simple_half_bytes" json:"ramp_simple_half_bytes"`
	RampLLS             *float64 `toml:"ramp_ll_s" json:"ramp_ll_s"`
	RampLLHalfBytes     *float64 `toml:"ramp_ll_half_bytes" json:"ramp_ll_half_bytes"`
	// The NVLS overhead among k GPUs beyond the link latency:
	// NVLSBaseS + NVLSPerRankS·k.
	NVLSBaseS    *float64 `toml:"nvls_base_s" json:"nvls_base_s"`
	NVLSPerRankS *float64 `toml:"nvls_per_rank_s" json:"nvls_per_rank_s"`
	// Source says where the values came from (the nccl-tests files of a fit).
	Source string `toml:"source" json:"source,omitempty"`
}

// Keys lists the tuning's values with their TOML keys, in file order.
func (c *CollectiveTuning) Keys() []struct {
	Key string
	Val *float64
} {
	return []struct {
		Key string
		Val *float64
	}{
		{"ramp_simple_s", c.RampSimpleS}, {"ramp_simple_half_bytes", c.RampSimpleHalfBytes},
		{"ramp_ll_s", c.RampLLS}, {"ramp_ll_half_bytes", c.RampLLHalfBytes},
		{"nvls_base_s", c.NVLSBaseS}, {"nvls_per_rank_s", c.NVLSPerRankS},
	}
}

// Complete says every key is present (Validate says which is not). It
// allocates nothing: the collective model asks it on every collective.
func (c *CollectiveTuning) Complete() bool {
	return c != nil && c.RampSimpleS != nil && c.RampSimpleHalfBytes != nil && c.RampLLS != nil &&
		c.RampLLHalfBytes != nil && c.NVLSBaseS != nil && c.NVLSPerRankS != nil
}

// Validate checks every key is present and in range; field is the config
// path of the section ("topology.collectives").
func (c *CollectiveTuning) Validate(field string) error {
	if c == nil {
		return nil
	}
	for _, k := range c.Keys() {
		switch {
		case k.Val == nil:
			return fmt.Errorf("%s.%s: missing (a [%s] section sets all of ramp_simple_s, ramp_simple_half_bytes, ramp_ll_s, ramp_ll_half_bytes, nvls_base_s, nvls_per_rank_s; `partbench collectives --measured FILE --fit` writes one)", field, k.Key, field)
		case math.IsNaN(*k.Val) || math.IsInf(*k.Val, 0):
			return fmt.Errorf("%s.%s: must be a finite number (got %v)", field, k.Key, *k.Val)
		}
		v := *k.Val
		if strings.HasSuffix(k.Key, "_half_bytes") {
			if v < 1 || v > 1<<40 {
				return fmt.Errorf("%s.%s: must be in [1, 2^40] bytes (got %g)", field, k.Key, v)
			}
			continue
		}
		if v < 0 || v > 1 {
			return fmt.Errorf("%s.%s: must be in [0, 1] seconds (got %g)", field, k.Key, v)
		}
	}
	return nil
}
