package configs

import "fmt"

// ApplyCalibrationFile loads the calibration at path ("" = none, nothing to
// do) and applies it to cfg (its hardware, and its links as
// Calibration.Apply says), then validates cfg. The notes say what was
// replaced; the caller shows them. Errors name the --calibration flag.
func ApplyCalibrationFile(cfg *Config, path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	cal, err := LoadCalibration(path)
	if err != nil {
		return nil, fmt.Errorf("--calibration: %w", err)
	}
	notes := cal.Apply(cfg)
	// A calibration measures the hardware; a chosen runtime's host costs stay.
	cfg.Hardware.GPU = cfg.Runtime.Apply(cfg.Hardware.GPU)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--calibration %s: the calibrated config is not valid: %w", path, err)
	}
	return notes, nil
}

// RunOverrides are a measured run's changes to its config: warm-up and
// measured iterations (negative: the config's own) and a calibration file
// ("": the config's hardware).
type RunOverrides struct {
	Warmup, Iterations int
	Calibration        string
}

// LoadRun loads the config name, applies the overrides and validates the
// result. The notes say what the calibration replaced.
func LoadRun(name string, o RunOverrides) (*Config, []string, error) {
	cfg, err := Load(name)
	if err != nil {
		return nil, nil, err
	}
	if o.Warmup >= 0 {
		cfg.Run.Warmup = o.Warmup
	}
	if o.Iterations >= 0 {
		cfg.Run.Iterations = o.Iterations
	}
	notes, err := ApplyCalibrationFile(cfg, o.Calibration)
	if err != nil {
		return nil, nil, err
	}
	return cfg, notes, cfg.Validate()
}

// LoadCalibrated loads each named config (none: DefaultStrategies) and
// applies the calibration at path to each ("" = none); notes[i] says what it
// replaced in the i-th.
func LoadCalibrated(names []string, calibration string) ([]*Config, [][]string, error) {
	if len(names) == 0 {
		names = DefaultStrategies
	}
	cfgs, notes := make([]*Config, 0, len(names)), make([][]string, 0, len(names))
	for _, n := range names {
		cfg, err := Load(n)
		if err != nil {
			return nil, nil, err
		}
		ns, err := ApplyCalibrationFile(cfg, calibration)
		if err != nil {
			return nil, nil, err
		}
		cfgs, notes = append(cfgs, cfg), append(notes, ns)
	}
	return cfgs, notes, nil
}

// LoadEstimated is what a dry run estimates: the model directory's run
// when dir is set (its model, workload and partitioning from dir.Dir and
// its fields), else the named configs (none: DefaultStrategies); each with
// the calibration at path applied ("" = none). A directory and names
// together are refused: one says what the other would.
func LoadEstimated(names []string, dir ModelDirRun, calibration string) ([]*Config, error) {
	if dir.Dir == "" {
		cfgs, _, err := LoadCalibrated(names, calibration)
		return cfgs, err
	}
	if len(names) > 0 {
		return nil, fmt.Errorf("--model-dir: the model, workload and partitioning come from --model-dir and its flags; --config and --compare cannot be given with it")
	}
	cfg, err := dir.Config()
	if err != nil {
		return nil, err
	}
	_, err = ApplyCalibrationFile(cfg, calibration)
	return []*Config{cfg}, err
}
