package sim

import (
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// EstimateConfig plans cfg and estimates the plan. The plan is built
// without its rank list (partition.NewPlanStages: an estimate reads ranks
// through Plan.RankAt), so planning grows with the stages, not the GPUs;
// the Estimate's Plan has no Ranks.
func EstimateConfig(cfg *configs.Config, opts Options) (*Estimate, error) {
	plan, err := partition.NewPlanStages(cfg)
	if err != nil {
		return nil, err
	}
	return EstimatePlan(plan, opts)
}

// SweepPoint is every strategy's estimate at one value of the swept key;
// Skipped names strategies the value makes invalid, with the reason.
type SweepPoint struct {
	Value      int         `json:"value"`
	Strategies []*Estimate `json:"strategies"`
	Skipped    []string    `json:"skipped,omitempty"`
}

// Sweep estimates every config at every value of key (configs.Sweepable),
// in order. A value a config cannot take, or cannot be planned or estimated
// with, skips that config at that point with the reason.
func Sweep(cfgs []*configs.Config, key string, values []int, opts Options) []SweepPoint {
	var pts []SweepPoint
	for _, v := range values {
		p := SweepPoint{Value: v}
		for _, c := range cfgs {
			n, err := c.With(key, v)
			if err == nil {
				var e *Estimate
				if e, err = EstimateConfig(n, opts); err == nil {
					p.Strategies = append(p.Strategies, e)
					continue
				}
			}
			p.Skipped = append(p.Skipped, c.Name+": "+err.Error())
		}
		pts = append(pts, p)
	}
	return pts
}
