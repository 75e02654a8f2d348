package configs

import (
	"reflect"
	"strings"
	"testing"
)

// The [engine] table survives a write and a read, and EngineLaunchHostS
// reads it; a calibration without it (every file written before it
// existed) loads and falls back to the hardware's kernel_launch_s.
func TestEngineCalibrationRoundTrip(t *testing.T) {
	want := sampleCalibration()
	want.Engine = &EngineCalibration{LaunchHostS: 5.5e-6, Config: "test/single-tiny", Seqs: 16, Launches: 744, Iterations: 60}
	p := writeCalibration(t, want)
	got, err := LoadCalibration(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Engine, want.Engine) {
		t.Errorf("engine %+v, want %+v", got.Engine, want.Engine)
	}
	if v, err := EngineLaunchHostS(p, 6e-6); err != nil || v != 5.5e-6 {
		t.Errorf("EngineLaunchHostS = %g, %v; want the file's 5.5e-06", v, err)
	}
	old := writeCalibration(t, sampleCalibration())
	if v, err := EngineLaunchHostS(old, 6e-6); err != nil || v != 6e-6 {
		t.Errorf("EngineLaunchHostS of a file without [engine] = %g, %v; want the hardware's 6e-06", v, err)
	}
	if v, err := EngineLaunchHostS("", 6e-6); err != nil || v != 6e-6 {
		t.Errorf("EngineLaunchHostS without a file = %g, %v; want 6e-06", v, err)
	}
}

// A wrong [engine] figure is refused naming the key and the value.
func TestEngineCalibrationValidation(t *testing.T) {
	for _, c := range []struct {
		e    EngineCalibration
		want string
	}{
		{EngineCalibration{LaunchHostS: 0, Config: "c", Seqs: 1, Launches: 1, Iterations: 1}, "engine.launch_host_s: must be in (0, 0.01] seconds (got 0)"},
		{EngineCalibration{LaunchHostS: 0.5, Config: "c", Seqs: 1, Launches: 1, Iterations: 1}, "engine.launch_host_s: must be in (0, 0.01] seconds (got 0.5)"},
		{EngineCalibration{LaunchHostS: 1e-6, Seqs: 1, Launches: 1, Iterations: 1}, "engine.config: must name"},
		{EngineCalibration{LaunchHostS: 1e-6, Config: "c", Seqs: 16, Launches: 0, Iterations: 3}, "engine: seqs, launches and iterations must be ≥ 1 (got 16, 0, 3)"},
	} {
		cal := sampleCalibration()
		e := c.e
		cal.Engine = &e
		err := cal.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.e, err, c.want)
		}
	}
}
