package report

import (
	"slices"
	"testing"

	"github.com/partbench/partbench/configs"
)

// The figures grid lists a figure only where the calibration has its
// spread, and the serving engine's [engine] figure where the file has one:
// a GPU calibration with graph_op_saved_s 2.19 µs (spread 1.72–2.64 µs over
// two configs) and launch_host_s 6.29 µs gives exactly those two rows.
func TestCalibrationGridsFigures(t *testing.T) {
	cal := &configs.Calibration{Spread: map[string]configs.Spread{"graph_op_saved_s": {Min: 1.72e-6, Median: 2.19e-6, Max: 2.64e-6, N: 2}}}
	cal.Hardware.GraphOpSavedS = 2.19e-6
	cal.Engine = &configs.EngineCalibration{LaunchHostS: 6.29e-6, Config: "test/single-tiny", Seqs: 16, Launches: 744, Iterations: 24}
	figs := CalibrationGrids(cal, "cal.toml")[0]
	want := [][]string{
		{"graph_op_saved_s", "2.19e-06", "1.72e-06", "2.19e-06", "2.64e-06", "s"},
		{"engine.launch_host_s", "6.29e-06", "—", "6.29e-06", "—", "s"},
	}
	if !slices.EqualFunc(figs.Rows, want, slices.Equal) {
		t.Errorf("rows %q, want %q", figs.Rows, want)
	}
	cal.Engine = nil
	if figs := CalibrationGrids(cal, "cal.toml")[0]; len(figs.Rows) != 1 {
		t.Errorf("without [engine]: rows %q, want graph_op_saved_s alone", figs.Rows)
	}
}
