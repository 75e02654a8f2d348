//go:build cgo

package calib

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
)

// The engine's host cost per launch, on the fake driver: every timed
// decode iteration of 16 sequences of test/single-tiny queues 744
// launches (serving's launches_fake_test.go derives them: 72 per pass +
// 16 × (36 + 6)), the figure is wall time over launches (positive, within
// the bounds a calibration allows) and the [engine] table is written and
// read back.
func TestEngineLaunchOnFake(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv("PARTBENCH_NCCL_LIB", filepath.Join(t.TempDir(), "libnccl.so.2"))
	for _, c := range []struct {
		quick          bool
		repeats, iters int
	}{
		// 5 repeats of 20 iterations from position 8 reach 8 + 3 + 100 =
		// 111 ≤ 128; quick, 3 of 8.
		{false, 5, 20}, {true, 3, 8},
		// 12 repeats of 20 would pass the slots' 128 positions: (128 − 8
		// − 3) / 12 = 9 each.
		{false, 12, 9},
	} {
		e, sp, modeled, err := engineLaunch(context.Background(), Options{Quick: c.quick, Repeats: c.repeats})
		if err != nil {
			t.Fatal(err)
		}
		if e.Launches != 744 || modeled != 744 {
			t.Errorf("%+v: %d launches per iteration, the model %d; want 744", c, e.Launches, modeled)
		}
		if e.Iterations != c.repeats*c.iters || sp.N != c.repeats || e.Seqs != 16 || e.Config != "test/single-tiny" {
			t.Errorf("%+v: %+v, spread %+v", c, e, sp)
		}
		if !(e.LaunchHostS > 0 && e.LaunchHostS >= sp.Min && e.LaunchHostS <= sp.Max) {
			t.Errorf("%+v: launch_host_s %g outside its spread %+v", c, e.LaunchHostS, sp)
		}
	}

	cal := &configs.Calibration{Comments: map[string]string{}, Info: configs.CalibrationInfo{Backend: configs.BackendCUDA}}
	measureEngineLaunch(context.Background(), Options{Quick: true, Repeats: 2}, cal)
	if cal.Engine == nil || len(cal.Info.Warnings) != 0 {
		t.Fatalf("engine %+v, warnings %q", cal.Engine, cal.Info.Warnings)
	}
	if !strings.Contains(cal.Comments["engine"], "16 decode iterations of 16 sequences of test/single-tiny") {
		t.Errorf("comment %q", cal.Comments["engine"])
	}
}

// The full GPU calibration on the fakes carries the [engine] table into
// its file, and the file loads.
func TestCUDACalibrationWritesEngine(t *testing.T) {
	cal := fakeCUDACalibration(t)
	if cal.Engine == nil || cal.Engine.Launches != 744 {
		t.Fatalf("engine %+v (notes %q)", cal.Engine, cal.Info.Notes)
	}
	var b bytes.Buffer
	if err := cal.WriteTOML(&b, nil); err != nil {
		t.Fatal(err)
	}
	back, err := configs.ParseCalibration(&b, "calib.toml")
	if err != nil {
		t.Fatal(err)
	}
	if back.Engine == nil || *back.Engine != *cal.Engine {
		t.Errorf("read back %+v, wrote %+v", back.Engine, cal.Engine)
	}
}
