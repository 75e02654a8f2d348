package configs

import (
	"fmt"

	"github.com/partbench/partbench/topology"
)

// EngineCalibration is the host cost of one launch of the serving engine's
// GPU iteration (`partbench serve --backend cuda`), measured through the
// engine itself: decode iterations of Seqs sequences of Config run by the
// engine's Go code on exec/cuda, their wall time over their launches
// (kernels, cuBLAS calls, copies and memsets, exec/cuda's LaunchStats). The
// engine runs eagerly, so on a small model an iteration takes as long as
// its host takes to queue its launches; the serving model prices an
// iteration of the GPU engine at the larger of its device time and its
// launches × LaunchHostS. A calibration without it (older files, CPU
// calibrations) prices those launches at the hardware's kernel_launch_s.
type EngineCalibration struct {
	// LaunchHostS is the median over repeats of Σ wall / Σ launches.
	LaunchHostS float64 `toml:"launch_host_s"`
	Config      string  `toml:"config"`
	Seqs        int     `toml:"seqs"`
	// Launches is what one timed iteration queued; Iterations how many
	// were timed in all.
	Launches   int `toml:"launches"`
	Iterations int `toml:"iterations"`
}

// validate names the field of a wrong figure.
func (e *EngineCalibration) validate() []error {
	var errs []error
	if !(e.LaunchHostS > 0 && e.LaunchHostS <= topology.MaxKernelLaunch) {
		errs = append(errs, fmt.Errorf("engine.launch_host_s: must be in (0, %g] seconds (got %g)", topology.MaxKernelLaunch, e.LaunchHostS))
	}
	if e.Config == "" {
		errs = append(errs, fmt.Errorf("engine.config: must name the config the engine ran"))
	}
	if e.Seqs < 1 || e.Launches < 1 || e.Iterations < 1 {
		errs = append(errs, fmt.Errorf("engine: seqs, launches and iterations must be ≥ 1 (got %d, %d, %d)", e.Seqs, e.Launches, e.Iterations))
	}
	return errs
}

// write puts the [engine] table.
func (e *EngineCalibration) write(tw *topology.TOMLWriter, comment string) {
	tw.Table("engine", comment)
	kvs(tw, "launch_host_s", e.LaunchHostS, "config", e.Config, "seqs", e.Seqs, "launches", e.Launches, "iterations", e.Iterations)
}

// EngineLaunchHostS is the host cost of one of the GPU serving engine's
// launches: the [engine] figure of the calibration at path, else hw (the
// hardware's kernel_launch_s, which the caller passes).
func EngineLaunchHostS(path string, hw float64) (float64, error) {
	if path == "" {
		return hw, nil
	}
	cal, err := LoadCalibration(path)
	if err != nil {
		return 0, fmt.Errorf("--calibration: %w", err)
	}
	if cal.Engine == nil {
		return hw, nil
	}
	return cal.Engine.LaunchHostS, nil
}
