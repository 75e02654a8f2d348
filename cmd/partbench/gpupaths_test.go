//go:build cgo

package main

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
)

// gpuPathCommands are the commands whose --backend cuda path is refused;
// each names the missing driver first, as `run --backend cuda` does.
func gpuPathCommands(t *testing.T) map[string][]string {
	dir := t.TempDir()
	return map[string][]string{
		"calibrate":               {"calibrate", "--output", dir + "/c.toml", "--backend", "cuda"},
		"l2 --measure":            {"l2", "--measure", "--backend", "cuda"},
		"generate":                {"generate", "--model-dir", dir, "--ids-file", dir + "/ids.json", "--backend", "cuda"},
		"run --check --model-dir": {"run", "--check", "--model-dir", dir, "--backend", "cuda"},
		"resume":                  {"resume", "--backend", "cuda", "--output-dir", dir},
	}
}

// Without a CUDA driver every GPU path names the driver that was searched
// for and how to point at it (PARTBENCH_CUDA_LIB), never "allowed: cpu".
func TestGPUPathsNameTheMissingDriver(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/libcuda.so.1")
	for name, args := range gpuPathCommands(t) {
		_, err := runCLI(t, args...)
		if err == nil {
			t.Errorf("%s: accepted without a driver", name)
			continue
		}
		msg := err.Error()
		for _, want := range []string{name + " --backend cuda: the GPU backend cannot run here", "libcuda.so.1", "PARTBENCH_CUDA_LIB"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q lacks %q", name, msg, want)
			}
		}
		if strings.Contains(msg, "allowed") || strings.Contains(msg, "not written") {
			t.Errorf("%s: error %q speaks of the path, not of the driver", name, msg)
		}
	}
}

// With a driver (the fake, two GPUs) the refusal says the path is not
// written, after naming the driver check that passed.
func TestGPUPathsNotWrittenAfterTheDriver(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	for name, args := range gpuPathCommands(t) {
		_, err := runCLI(t, args...)
		want := name + " --backend cuda: loaded the CUDA driver and found a GPU; `" + name + " --backend cuda` is not written yet: "
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want it to start %q", name, err, want)
		}
	}
}
