//go:build cgo

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
)

// Without a CUDA driver, calibrate --backend cuda names the driver that was
// searched for and how to point at it, as run --backend cuda does.
func TestCalibrateCUDANamesTheMissingDriver(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", filepath.Join(t.TempDir(), "libcuda.so.1"))
	_, err := runCLI(t, "calibrate", "--backend", "cuda", "--output", filepath.Join(t.TempDir(), "c.toml"))
	if err == nil {
		t.Fatal("accepted without a driver")
	}
	for _, want := range []string{"calibrate --backend cuda: the GPU backend cannot run here", "libcuda.so.1", "PARTBENCH_CUDA_LIB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "not written") || strings.Contains(err.Error(), "allowed") {
		t.Errorf("error %q speaks of the path, not of the driver", err)
	}
}

// On the fake libraries the GPU calibration runs end to end (tiny shapes,
// a 1–16 MiB curve), writes a profile that loads, and model --dry-run
// prices a one-GPU config with it.
func TestCalibrateCUDAOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv("PARTBENCH_NCCL_LIB", filepath.Join(t.TempDir(), "libnccl.so.2"))
	p := filepath.Join(t.TempDir(), "calib.toml")
	out, err := runCLI(t, "calibrate", "--backend", "cuda", "--quick", "--shapes-from", "test/single-tiny", "--op-configs", "test/single-tiny",
		"--max-working-set", "16777216", "--out", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fp16_flops_per_s", "graph_launch_s", "Fake H100 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	cal, err := configs.LoadCalibration(p)
	if err != nil {
		t.Fatal(err)
	}
	if cal.Info.Backend != "cuda" || cal.Hardware.Name != "Fake H100 0" || len(cal.OpTimes) == 0 {
		t.Errorf("calibration %+v", cal.Info)
	}
	// run --calibration loads its config this way, whatever the backend:
	// the model beside the measured run is priced with the GPU profile.
	runCfg, notes, err := configs.LoadRun("test/single-tiny", configs.RunOverrides{Warmup: -1, Iterations: -1, Calibration: p})
	if err != nil {
		t.Fatal(err)
	}
	if runCfg.Hardware.GPU.Name != "Fake H100 0" || len(runCfg.Hardware.OpTimes) != len(cal.OpTimes) || len(notes) == 0 {
		t.Errorf("run config: hardware %q, %d op times, notes %q", runCfg.Hardware.GPU.Name, len(runCfg.Hardware.OpTimes), notes)
	}
	est, err := runCLI(t, "model", "--dry-run", "--calibration", p, "--config", "test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	// Every op of single-tiny has a measured time: the bottleneck of both
	// phases is the op-time table, not a roofline bound.
	if strings.Count(est, "│ table      │") != 2 {
		t.Errorf("the estimate is not priced from the op-time table:\n%s", est)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nproc", "2"}, "--nproc: the GPU calibration measures one GPU (one rank, no link between GPUs; got 2)"},
		{[]string{"--op-ranks", "1,2"}, "--op-ranks: the GPU calibration times ops with the GPU to one rank: must be 1 (got [1 2])"},
		{[]string{"--op-configs", "test/single-tiny", "--op-configs", "seed4-1gpu"}, "--op-configs: seed4-1gpu computes in fp16, single-tiny in fp32"},
		{[]string{"--max-working-set", "4194304"}, "max working set: must give at least 5 working sets"},
	} {
		args := append([]string{"calibrate", "--backend", "cuda", "--quick", "--out", filepath.Join(t.TempDir(), "x.toml")}, c.args...)
		if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
