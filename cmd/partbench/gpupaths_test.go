//go:build cgo

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
)

// gpuPathCommands are the commands with a --backend cuda path; without a
// driver each names the missing driver first, as `run --backend cuda` does.
func gpuPathCommands(t *testing.T) map[string][]string {
	dir := t.TempDir()
	return map[string][]string{
		"calibrate":               {"calibrate", "--output", dir + "/c.toml", "--backend", "cuda"},
		"generate":                {"generate", "--model-dir", dir, "--ids-file", dir + "/ids.json", "--backend", "cuda"},
		"run --check --model-dir": {"run", "--check", "--model-dir", dir, "--backend", "cuda"},
		"l2 --measure":            {"l2", "--measure", "--backend", "cuda"},
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

// resume and serve run on the GPU; without a driver they name it.
func TestResumeAndServeNameTheMissingDriver(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/libcuda.so.1")
	for _, args := range [][]string{
		{"resume", "--backend", "cuda", "--strategies", "recompute,offload", "--output-dir", t.TempDir()},
		{"serve", "--backend", "cuda", "--listen", "127.0.0.1:0"},
	} {
		_, err := runCLI(t, args...)
		if err == nil {
			t.Errorf("%v: accepted without a driver", args)
			continue
		}
		for _, want := range []string{"--backend cuda: the GPU backend needs the CUDA driver and a GPU", "libcuda.so.1", "PARTBENCH_CUDA_LIB"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %q lacks %q", args, err, want)
			}
		}
		if strings.Contains(err.Error(), "NCCL") || strings.Contains(err.Error(), "allowed") {
			t.Errorf("%v: error %q names NCCL or the allowed backends, not the driver", args, err)
		}
	}
}

// `resume --backend cuda` on the fake driver (no NCCL installed): the
// recompute and offload strategies run through the registry's GPU Compute
// and the results are written with backend "cuda".
func TestResumeOnFakeCUDA(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv("PARTBENCH_NCCL_LIB", t.TempDir()+"/libnccl.so.2")
	dir := t.TempDir()
	if out, err := runCLI(t, "resume", "--config", "test/single-tiny", "--backend", "cuda", "--strategies", "recompute,offload", "--layers", "1,3",
		"--trials", "1", "--warmup", "0", "--output-dir", dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "resume.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Measured struct {
			Backend string `json:"backend"`
			Results []struct {
				Strategy    string `json:"strategy"`
				ToHostBytes int64  `json:"to_host_bytes"`
			} `json:"results"`
		} `json:"measured"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// Two layers × two strategies; single-tiny's offload is 4 × 20 × 64 × 4 B.
	if doc.Measured.Backend != "cuda" || len(doc.Measured.Results) != 4 {
		t.Fatalf("resume.json: backend %q, %d rows; want cuda, 4", doc.Measured.Backend, len(doc.Measured.Results))
	}
	for _, r := range doc.Measured.Results {
		if want := map[string]int64{"recompute": 0, "offload": 20480}[r.Strategy]; r.ToHostBytes != want {
			t.Errorf("%s: %d B to the host, want %d", r.Strategy, r.ToHostBytes, want)
		}
	}
}

// `l2 --measure --backend cuda`: without a driver it names it; on the fake
// every rank's working set is read through exec/cuda's L2Probe and the
// JSON carries the reads with the window beside those without. The fake's
// clock gives every sample the same time, so the ratios are exactly 1.
func TestL2MeasureCUDA(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/libcuda.so.1")
	_, err := runCLI(t, "l2", "--measure", "--backend", "cuda", "--config", "test/single-tiny")
	if err == nil || !strings.Contains(err.Error(), "l2 --measure --backend cuda: the GPU backend cannot run here") || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Fatalf("no driver: %v", err)
	}
	cudatest.Build(t).Setenv(t)
	out, err := runCLI(t, "l2", "--measure", "--backend", "cuda", "--quick", "--config", "test/single-tiny", "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var doc struct {
		Strategies []struct {
			Ranks []struct {
				Measured *struct {
					MeasuredBytes   int64   `json:"measured_bytes"`
					ReuseBytesPerS  float64 `json:"reuse_bytes_per_s"`
					WindowBytesPerS float64 `json:"window_bytes_per_s"`
					Ratio           float64 `json:"ratio"`
					WindowRatio     float64 `json:"window_ratio"`
				} `json:"measured"`
			} `json:"ranks"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Strategies) != 1 || len(doc.Strategies[0].Ranks) == 0 {
		t.Fatalf("strategies %+v", doc.Strategies)
	}
	for i, r := range doc.Strategies[0].Ranks {
		m := r.Measured
		if m == nil || m.MeasuredBytes <= 0 || m.ReuseBytesPerS <= 0 || m.WindowBytesPerS <= 0 || m.Ratio != 1 || m.WindowRatio != 1 {
			t.Errorf("rank %d measured %+v", i, m)
		}
	}
}
