package configs

import (
	"io/fs"
	"strings"
	"testing"
)

// edit returns the embedded single-tiny config (one rank, so both links are
// unused) with from replaced by to.
func edit(t *testing.T, from, to string) string {
	t.Helper()
	data, err := fs.ReadFile(Files, "test/single-tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), from) {
		t.Fatalf("test/single-tiny.toml has no %q", from)
	}
	return strings.Replace(string(data), from, to, 1)
}

// Issue 12 item 2: every float is finite and in a physically meaningful
// range, whether or not its section is used (single-tiny has one node and one
// GPU, so neither link is used).
func TestEveryFloatFiniteAndInRange(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"nan latency on an unused inter-node link", "latency_s = 5.0e-6", "latency_s = nan",
			"topology.inter_node.latency_s: must be a finite number in [0, 1] seconds (got NaN)"},
		{"inf latency on an unused inter-node link", "latency_s = 5.0e-6", "latency_s = inf",
			"topology.inter_node.latency_s: must be a finite number in [0, 1] seconds (got +Inf)"},
		{"tiny bandwidth on an unused intra-node link", "bytes_per_s = 450e9", "bytes_per_s = 1e-308",
			"topology.intra_node.bytes_per_s: must be a positive finite number in [1000, 1e+15] B/s (got 1e-308)"},
		{"nan bandwidth on an unused link", "bytes_per_s = 50e9", "bytes_per_s = nan",
			"topology.inter_node.bytes_per_s: must be a positive finite number in [1000, 1e+15] B/s (got NaN)"},
		{"denormal hbm efficiency", `preset = "h100-sxm"`, "preset = \"h100-sxm\"\nhbm_efficiency = 5e-324",
			"hardware.hbm_efficiency: must be a positive finite number in [0.001, 1] (got 5e-324)"},
		{"nan compute efficiency", `preset = "h100-sxm"`, "preset = \"h100-sxm\"\ncompute_efficiency = nan",
			"hardware.compute_efficiency: must be a positive finite number in [0.001, 1] (got NaN)"},
		{"infinite peak", `preset = "h100-sxm"`, "preset = \"h100-sxm\"\nfp32_flops_per_s = inf",
			"hardware.fp32_flops_per_s: must be a positive finite number in [1e+06, 1e+18] FLOP/s (got +Inf)"},
		{"nan fp8 peak", `preset = "h100-sxm"`, "preset = \"h100-sxm\"\nfp8_flops_per_s = nan",
			"hardware.fp8_flops_per_s: must be a positive finite number in [1e+06, 1e+18] FLOP/s, or 0 (not supported) (got NaN)"},
		{"tiny hbm bandwidth", `preset = "h100-sxm"`, "preset = \"h100-sxm\"\nhbm_bytes_per_s = 1e-308",
			"hardware.hbm_bytes_per_s: must be a positive finite number in [1e+06, 1e+16] B/s (got 1e-308)"},
		{"nan kernel launch", `preset = "h100-sxm"`, "preset = \"h100-sxm\"\nkernel_launch_s = nan",
			"hardware.kernel_launch_s: must be a finite number in [0, 0.01] seconds (got NaN)"},
		{"unknown class on an unused link", `class = "network"`, `class = "carrier-pigeon"`,
			"topology.inter_node.class: must be one of nvlink, pcie, network"},
	} {
		_, err := Parse(strings.NewReader(edit(t, tc.from, tc.to)), "inline")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// An unused link left out entirely stays valid.
func TestUnusedLinkMayBeAbsent(t *testing.T) {
	in := edit(t, "[topology.inter_node]\nclass = \"network\"\nname = \"400 Gb/s network\"\nbytes_per_s = 50e9\nlatency_s = 5.0e-6\n", "")
	if _, err := Parse(strings.NewReader(in), "inline"); err != nil {
		t.Fatal(err)
	}
}

// Issue 12 item 3: the limits, each with the field, the value and the range.
func TestLimits(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"layers", "layers = 8", "layers = 1001", "model.layers: must be in [1, 1000] (got 1001)"},
		{"layers 65536", "layers = 8", "layers = 65536", "model.layers: must be in [1, 1000] (got 65536)"},
		{"context", "context = 24", "context = 10000001", "workload.context: must be in [2, 10000000] (got 10000001)"},
		{"microbatches", "microbatches = 1", "microbatches = 8192", "parallel.microbatches: must be in [1, 4096] (got 8192)"},
	} {
		_, err := Parse(strings.NewReader(edit(t, tc.from, tc.to)), "inline")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// 4096 nodes × 576 GPUs = 2,359,296 GPUs: over the 100,000 limit.
	in := edit(t, "nodes = 1\ngpus_per_node = 1", "nodes = 4096\ngpus_per_node = 576")
	_, err := Parse(strings.NewReader(in), "inline")
	if want := "topology: nodes × gpus_per_node = 4096 × 576 = 2359296 GPUs, more than the 100000 allowed"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("gpus: %v, want %q", err, want)
	}
	// At the limits: 1,000 layers and a 10M-token context are accepted.
	in = edit(t, "layers = 8", "layers = 1000")
	in = strings.Replace(in, "context = 24", "context = 10000000", 1)
	if _, err := Parse(strings.NewReader(in), "inline"); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}

// Issue 12 item 9: one output token is refused with the reason.
func TestOneOutputTokenRefused(t *testing.T) {
	_, err := Parse(strings.NewReader(edit(t, "output_tokens = 4", "output_tokens = 1")), "inline")
	if want := "workload.output_tokens: must be ≥ 2: one output token is the prefill alone"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	if _, err := Parse(strings.NewReader(edit(t, "output_tokens = 4", "output_tokens = 2")), "inline"); err != nil {
		t.Fatalf("two output tokens: %v", err)
	}
}
