package configs

import (
	"path/filepath"
	"strings"
	"testing"
)

// Moved from cmd/partbench's calibrate_test.go with ApplyCalibrationFile.
func TestApplyCalibrationErrors(t *testing.T) {
	cfg, _ := Load("test/tp2pp2-tiny")
	if _, err := ApplyCalibrationFile(cfg, filepath.Join(t.TempDir(), "none.toml")); err == nil || !strings.HasPrefix(err.Error(), "--calibration: read calibration") {
		t.Errorf("missing file: %v", err)
	}
	// The CPU profile has no fp8: a config in fp8 does not validate.
	cfg.Model.DType = "fp8"
	_, err := ApplyCalibrationFile(cfg, writeCalibration(t, sampleCalibration()))
	if err == nil || !strings.Contains(err.Error(), "model.dtype: fp8 is not supported by hardware \"cpu:AMD EPYC\"") {
		t.Errorf("fp8 on the CPU profile: %v", err)
	}
	fresh, _ := Load("test/tp2pp2-tiny")
	if notes, err := ApplyCalibrationFile(fresh, ""); notes != nil || err != nil || fresh.Hardware.Name != "H100-SXM5-80GB" {
		t.Errorf("no calibration: notes %q, err %v, hardware %q", notes, err, fresh.Hardware.Name)
	}
}

func TestLoadRun(t *testing.T) {
	base, err := Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	// Negative counts keep the config's; no calibration, no notes.
	cfg, notes, err := LoadRun("test/tp2pp2-tiny", RunOverrides{Warmup: -1, Iterations: -1})
	if err != nil || notes != nil || cfg.Run.Warmup != base.Run.Warmup || cfg.Run.Iterations != base.Run.Iterations {
		t.Fatalf("no overrides: %+v, notes %q, %v", cfg.Run, notes, err)
	}
	cfg, notes, err = LoadRun("test/tp2pp2-tiny", RunOverrides{Warmup: 0, Iterations: 7, Calibration: writeCalibration(t, sampleCalibration())})
	if err != nil || cfg.Run.Warmup != 0 || cfg.Run.Iterations != 7 || cfg.Hardware.Name != "cpu:AMD EPYC" || len(notes) == 0 {
		t.Fatalf("overrides: %+v on %q, notes %q, %v", cfg.Run, cfg.Hardware.Name, notes, err)
	}
	if _, _, err := LoadRun("test/tp2pp2-tiny", RunOverrides{Warmup: -1, Iterations: 0}); err == nil || !strings.Contains(err.Error(), "iterations") {
		t.Errorf("0 iterations: %v, want an error naming iterations", err)
	}
	if _, _, err := LoadRun("nope", RunOverrides{}); err == nil || !strings.Contains(err.Error(), `config "nope"`) {
		t.Errorf("missing config: %v", err)
	}
}

func TestLoadCalibrated(t *testing.T) {
	cfgs, notes, err := LoadCalibrated(nil, "")
	if err != nil || len(cfgs) != 2 || cfgs[0].Name != "tp8pp2" || cfgs[1].Name != "layerwise16" || notes[0] != nil || notes[1] != nil {
		t.Fatalf("default strategies: %d configs, notes %q, %v", len(cfgs), notes, err)
	}
	cal := writeCalibration(t, sampleCalibration())
	cfgs, notes, err = LoadCalibrated([]string{"test/tp2pp2-tiny", "test/single-tiny"}, cal)
	if err != nil || len(cfgs) != 2 || len(notes) != 2 {
		t.Fatalf("calibrated: %d configs, %d notes, %v", len(cfgs), len(notes), err)
	}
	for i, c := range cfgs {
		if c.Hardware.Name != "cpu:AMD EPYC" || len(notes[i]) == 0 {
			t.Errorf("%s: hardware %q, notes %q", c.Name, c.Hardware.Name, notes[i])
		}
	}
	if _, _, err := LoadCalibrated([]string{"test/tp2pp2-tiny", "nope"}, ""); err == nil || !strings.Contains(err.Error(), `config "nope"`) {
		t.Errorf("missing second config: %v", err)
	}
}

// LoadEstimated: names (none: the seed's two strategies), or a model
// directory, never both.
func TestLoadEstimated(t *testing.T) {
	cfgs, err := LoadEstimated(nil, ModelDirRun{}, "")
	if err != nil || len(cfgs) != len(DefaultStrategies) || cfgs[0].Name != DefaultStrategies[0] {
		t.Fatalf("defaults: %v %v", cfgs, err)
	}
	cfgs, err = LoadEstimated([]string{"test/tp2pp2-tiny"}, ModelDirRun{}, "")
	if err != nil || len(cfgs) != 1 || cfgs[0].Parallel.TP != 2 {
		t.Fatalf("named: %v %v", cfgs, err)
	}
	dir, err := filepath.Abs(filepath.Join("..", "checkpoint", "testdata", "llama-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadEstimated([]string{"tp8pp2"}, ModelDirRun{Dir: dir}, ""); err == nil || !strings.Contains(err.Error(), "--config and --compare cannot be given with it") {
		t.Errorf("both: %v", err)
	}
	cfgs, err = LoadEstimated(nil, ModelDirRun{Dir: dir, Batch: 2, Context: 16, OutputTokens: 4}, "")
	if err != nil || len(cfgs) != 1 || cfgs[0].Model.Layers != 2 || cfgs[0].Model.Hidden != 64 { // llama-tiny: 2 layers of 64
		t.Fatalf("model dir: %v %v", cfgs, err)
	}
}
