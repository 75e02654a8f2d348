package topology

import (
	"math"
	"testing"
)

func TestPCIeBytesPerS(t *testing.T) {
	for _, c := range []struct {
		gen, lanes int
		want       float64 // GT/s × lanes × encoding / 8
	}{
		{1, 16, 2.5e9 * 16 * 0.8 / 8},      // 4 GB/s
		{2, 8, 5e9 * 8 * 0.8 / 8},          // 4 GB/s
		{3, 16, 8e9 * 16 * 128 / 130 / 8},  // 15.75 GB/s
		{4, 16, 16e9 * 16 * 128 / 130 / 8}, // 31.5 GB/s
		{5, 16, 63.01538461538461e9},       // 64 GB/s × 128/130
		{5, 8, 63.01538461538461e9 / 2},    // half the lanes
		{6, 16, 64e9 * 16 / 8},             // 128 GB/s, FLIT overhead not subtracted
		{7, 16, 0},                         // unknown generation
		{5, 0, 0},                          // width not reported
	} {
		if got := PCIeBytesPerS(c.gen, c.lanes); math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("PCIeBytesPerS(%d, %d) = %g, want %g", c.gen, c.lanes, got, c.want)
		}
	}
}

func TestNVLinkBytesPerSPerLink(t *testing.T) {
	// Total bidirectional bandwidth / links / 2 directions.
	for gen, want := range map[int]float64{
		1: 160e9 / 4 / 2,   // 20 GB/s
		2: 300e9 / 6 / 2,   // 25 GB/s
		3: 600e9 / 12 / 2,  // 25 GB/s
		4: 900e9 / 18 / 2,  // 25 GB/s: 18 links give the datasheet's 450 GB/s per direction
		5: 1800e9 / 18 / 2, // 50 GB/s
		6: 0,               // no figure yet
	} {
		if got := NVLinkBytesPerSPerLink(gen); got != want {
			t.Errorf("NVLinkBytesPerSPerLink(%d) = %g, want %g", gen, got, want)
		}
	}
	if got := 18 * NVLinkBytesPerSPerLink(4); got != 450e9 {
		t.Errorf("H100: 18 links × per-link = %g, want 450e9 (datasheet: 900 GB/s both directions)", got)
	}
}

func TestNVLinkGeneration(t *testing.T) {
	for _, c := range []struct {
		major, minor int
		raw          uint32
		want         int
	}{
		{9, 0, 7, 4},  // H100 reports 7; the architecture wins
		{8, 0, 5, 3},  // A100 reports 5
		{8, 6, 5, 3},  // RTX 3090 / A40 bridges
		{7, 0, 2, 2},  // V100
		{6, 0, 1, 1},  // P100
		{10, 0, 8, 5}, // B200
		{0, 0, 6, 4},  // unknown architecture: the header's enum, 6 = 4.0
		{0, 0, 4, 3},  // 4 = 3.0
		{0, 0, 3, 2},  // 3 = 2.2
		{0, 0, 0, 0},  // nothing known
	} {
		if got := NVLinkGeneration(c.major, c.minor, c.raw); got != c.want {
			t.Errorf("NVLinkGeneration(%d.%d, %d) = %d, want %d", c.major, c.minor, c.raw, got, c.want)
		}
	}
}

func TestLookupGPUModel(t *testing.T) {
	for _, c := range []struct {
		name, model, preset string
	}{
		{"NVIDIA H100 80GB HBM3", "H100 SXM5", "h100-sxm"},
		{"NVIDIA H100 PCIe", "H100 PCIe", ""},
		{"NVIDIA H100 NVL", "", ""},
		{"NVIDIA H200", "H200 SXM", "h200-sxm"},
		{"NVIDIA H200 141GB HBM3e", "H200 SXM", "h200-sxm"},
		{"NVIDIA H200 NVL", "", ""},
		{"NVIDIA GH200 480GB", "", ""},
		{"NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", "a100-sxm-80g"},
		{"NVIDIA A100-SXM4-40GB", "A100", ""},
		{"NVIDIA A100 80GB PCIe", "A100", ""},
		{"NVIDIA GeForce RTX 4090", "", ""},
	} {
		m, ok := LookupGPUModel(c.name)
		if ok != (c.model != "") || m.Model != c.model || m.Preset != c.preset {
			t.Errorf("LookupGPUModel(%q) = %q preset %q (found %v), want %q preset %q", c.name, m.Model, m.Preset, ok, c.model, c.preset)
		}
	}
}

func TestFP32CoresPerSM(t *testing.T) {
	// H100 SXM5: 16,896 FP32 cores / 132 SMs = 128; A100: 6,912 / 108 = 64.
	if got := FP32CoresPerSM(9, 0); 16896/got != 132 {
		t.Errorf("Hopper: %d cores per SM gives %d SMs, want 132", got, 16896/got)
	}
	if got := FP32CoresPerSM(8, 0); 6912/got != 108 {
		t.Errorf("A100: %d cores per SM gives %d SMs, want 108", got, 6912/got)
	}
	if got := FP32CoresPerSM(5, 0); got != 0 {
		t.Errorf("Maxwell: %d, want 0 (not in the table)", got)
	}
}
