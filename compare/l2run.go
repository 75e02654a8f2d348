package compare

import (
	"fmt"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// L2Strategies plans and estimates each config and holds its L2 figures
// beside probe's measurement of every rank's working set (nil probe: nothing
// is measured). calibrated says the configs' hardware is this machine's
// calibration: its cache bandwidth then turns a measured ratio into an
// implied residency. notes[i] (what the calibration replaced) go with the
// i-th, followed by what a reader of the measurement must know.
func L2Strategies(cfgs []*configs.Config, notes [][]string, calibrated bool, probe func(int64) calib.Reuse, backend string) ([]L2Strategy, error) {
	var out []L2Strategy
	for i, cfg := range cfgs {
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return nil, err
		}
		e, err := sim.EstimatePlan(plan, sim.Options{})
		if err != nil {
			return nil, err
		}
		var cacheBW float64
		if calibrated {
			cacheBW = cfg.Hardware.L2BytesPerS
		}
		st := L2(e, probe, cacheBW)
		st.Notes = notes[i]
		if probe != nil && !calibrated {
			st.Notes = append(st.Notes, fmt.Sprintf("the modeled residency is for %s, the measured ratio for this machine: give --calibration to model this machine", e.Hardware))
		}
		if probe != nil && backend == configs.BackendCPU && cfg.Model.DType != "fp32" { // the CPU backend computes in fp32
			st.Notes = append(st.Notes, fmt.Sprintf("working sets are the model's %s bytes; the CPU backend holds float32 weights, %d× as many", cfg.Model.DType, 4/partition.DTypeBytes(cfg.Model.DType)))
		}
		out = append(out, st)
	}
	return out, nil
}
