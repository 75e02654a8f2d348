package compare

import (
	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/sim"
)

// L2Strategy is one strategy's L2 figures, modeled and (when probed)
// measured.
type L2Strategy struct {
	Name     string         `json:"name"`
	Hardware string         `json:"hardware"`
	DType    string         `json:"dtype"`
	L2       sim.L2Estimate `json:"l2"`
	Ranks    []L2Rank       `json:"ranks"`
	Notes    []string       `json:"notes,omitempty"`
}

// L2Rank is one rank's reused working set, its modeled residency and the
// measured reuse proxy.
type L2Rank struct {
	Rank             int     `json:"rank"`
	Stage            int     `json:"stage"`
	TPIndex          int     `json:"tp_index"`
	Layers           []int   `json:"layers"`
	WorkingSetBytes  int64   `json:"working_set_bytes"`
	ModeledResidency float64 `json:"modeled_residency"`
	// Measured is the reuse probe of the rank's working set (--measure).
	Measured *calib.Reuse `json:"measured,omitempty"`
	// ImpliedResidency is the resident fraction the probe implies, given the
	// calibrated cache bandwidth (needs --calibration).
	ImpliedResidency *float64 `json:"implied_residency,omitempty"`
}

// L2 holds an estimate's L2 figures beside the reuse probe of each rank's
// working set: probe measures a working set of so many bytes (nil: nothing
// is measured); with cacheBytesPerS > 0 (a calibrated cache bandwidth) the
// measured ratio is turned into an implied residency.
func L2(e *sim.Estimate, probe func(workingSetBytes int64) calib.Reuse, cacheBytesPerS float64) L2Strategy {
	st := L2Strategy{Name: e.Name, Hardware: e.Hardware, DType: e.DType, L2: e.L2}
	for _, r := range e.Ranks.All() {
		lr := L2Rank{Rank: r.Rank, Stage: r.Stage, TPIndex: r.TPIndex, Layers: r.Layers, ModeledResidency: r.L2Residency,
			WorkingSetBytes: r.L2WorkingSetBytes}
		if probe != nil {
			m := probe(lr.WorkingSetBytes)
			lr.Measured = &m
			if cacheBytesPerS > 0 {
				if f, ok := m.ImpliedResidency(cacheBytesPerS); ok {
					lr.ImpliedResidency = &f
				}
			}
		}
		st.Ranks = append(st.Ranks, lr)
	}
	return st
}
