package configs

import (
	"math"
	"testing"
)

// Spec numbers the presets derive from their cited sources: a dense peak is
// half the "with sparsity" figure, a per-GPU figure is a system's divided by
// its GPUs, a per-direction link rate half the bidirectional total.
func TestHardwarePresetSpecsFromSources(t *testing.T) {
	for _, c := range []struct {
		hw, topo string
		field    string
		got      func(h Hardware, tp Topology) float64
		want     float64
	}{
		// A100 datasheet: FP16 tensor 624 TFLOPS with sparsity; 1,555 GB/s (40 GB), 1,935 (80 GB PCIe).
		{"a100-sxm-40g", "hgx-a100", "fp16", func(h Hardware, _ Topology) float64 { return h.FP16FLOPsPerS }, 624e12 / 2},
		{"a100-sxm-40g", "hgx-a100", "hbm", func(h Hardware, _ Topology) float64 { return h.HBMBytesPerS }, 1555e9},
		{"a100-pcie-80g", "pcie-gen4", "hbm", func(h Hardware, _ Topology) float64 { return h.HBMBytesPerS }, 1935e9},
		// A100 NVLink 600 GB/s total per GPU; no NVLink SHARP on NVSwitch gen 2.
		{"a100-sxm-80g", "hgx-a100", "nvlink", func(_ Hardware, tp Topology) float64 { return tp.Intra.BytesPerS }, 600e9 / 2},
		// H100 PCIe: FP16 tensor 1,513 TFLOPS with sparsity; H100 NVL 1,671 and 3.9 TB/s.
		{"h100-pcie", "pcie-gen5", "fp16", func(h Hardware, _ Topology) float64 { return h.FP16FLOPsPerS }, 1513e12 / 2},
		{"h100-nvl", "pcie-gen5", "fp16", func(h Hardware, _ Topology) float64 { return h.FP16FLOPsPerS }, 1671e12 / 2},
		{"h100-nvl", "pcie-gen5", "fp8", func(h Hardware, _ Topology) float64 { return h.FP8FLOPsPerS }, 3341e12 / 2},
		// L40S: FP8 1,466 TFLOPS with sparsity; 864 GB/s; 18,176 CUDA cores at 128 per SM.
		{"l40s", "pcie-gen4", "fp8", func(h Hardware, _ Topology) float64 { return h.FP8FLOPsPerS }, 1466e12 / 2},
		{"l40s", "pcie-gen4", "sms", func(h Hardware, _ Topology) float64 { return float64(h.SMs) }, 18176 / 128},
		// HGX B200: 8 GPUs, FP16 36 PFLOPS and FP8 72 with sparsity, FP32 600 TFLOPS; NVLink 1.8 TB/s per GPU.
		{"b200", "hgx-b200", "fp16", func(h Hardware, _ Topology) float64 { return h.FP16FLOPsPerS }, 36e15 / 8 / 2},
		{"b200", "hgx-b200", "fp8", func(h Hardware, _ Topology) float64 { return h.FP8FLOPsPerS }, 72e15 / 8 / 2},
		{"b200", "hgx-b200", "fp32", func(h Hardware, _ Topology) float64 { return h.FP32FLOPsPerS }, 600e12 / 8},
		{"b200", "hgx-b200", "memory", func(h Hardware, _ Topology) float64 { return float64(h.HBMBytes) }, 1440e9 / 8},
		{"b200", "hgx-b200", "nvlink", func(_ Hardware, tp Topology) float64 { return tp.Intra.BytesPerS }, 1.8e12 / 2},
		// GB200 NVL72: 72 GPUs, FP16 360 PFLOPS with sparsity, 13.4 TB and 576 TB/s of HBM3e, 130 TB/s NVLink.
		{"gb200", "gb200-nvl72", "fp16", func(h Hardware, _ Topology) float64 { return h.FP16FLOPsPerS }, 360e15 / 72 / 2},
		{"gb200", "gb200-nvl72", "memory", func(h Hardware, _ Topology) float64 { return float64(h.HBMBytes) }, 13.4e12 / 72},
		{"gb200", "gb200-nvl72", "hbm", func(h Hardware, _ Topology) float64 { return h.HBMBytesPerS }, 576e12 / 72},
		{"gb200", "gb200-nvl72", "nvlink", func(_ Hardware, tp Topology) float64 { return tp.Intra.BytesPerS }, 130e12 / 72 / 2},
		{"gb200", "gb200-nvl72", "domain", func(_ Hardware, tp Topology) float64 { return float64(tp.Size()) }, 72},
		// MI300X: FP16 2,614.9 TFLOPS with sparsity; 896 GB/s peak aggregate Infinity Fabric.
		{"mi300x", "mi300x-8", "fp16", func(h Hardware, _ Topology) float64 { return h.FP16FLOPsPerS }, 2614.9e12 / 2},
		{"mi300x", "mi300x-8", "fabric", func(_ Hardware, tp Topology) float64 { return tp.Intra.BytesPerS }, 896e9 / 2},
		// H20 (reported): FP8 296 TFLOPS dense = 2 × FP16 148.
		{"h20", "hgx-h20", "fp8", func(h Hardware, _ Topology) float64 { return h.FP8FLOPsPerS }, 2 * 148e12},
	} {
		g, tp, err := LoadSystem(c.hw, c.topo)
		if err != nil {
			t.Errorf("%s on %s: %v", c.hw, c.topo, err)
			continue
		}
		// Presets write rounded figures (186 GB for 13.4 TB / 72): within 0.5 %.
		if got := c.got(Hardware{GPU: g}, Topology{Topology: tp}); math.Abs(got-c.want) > 0.005*c.want {
			t.Errorf("%s %s: preset %g, source gives %g", c.hw, c.field, got, c.want)
		}
	}
	// One-node presets: one node, 8 GPUs; the NVL72 domain one node of 72.
	for _, n := range []string{"hgx-a100", "hgx-h100", "hgx-h200", "hgx-h20", "hgx-b200", "mi300x-8", "pcie-gen4"} {
		_, tp, err := LoadSystem("h100-sxm", n)
		if err != nil || tp.Nodes != 1 || tp.GPUsPerNode != 8 {
			t.Errorf("%s: %v, %d × %d", n, err, tp.Nodes, tp.GPUsPerNode)
		}
	}
}
