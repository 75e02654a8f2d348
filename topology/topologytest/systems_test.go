package topologytest_test

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/topologytest"
)

// The canned systems are the presets where a preset exists, so a test on a
// fake sees the figures a user of the preset does.
func TestSystemsMatchPresets(t *testing.T) {
	g, topo, err := configs.LoadSystem("h100-sxm", "dgx-h100x2")
	if err != nil {
		t.Fatal(err)
	}
	if got := topologytest.DGXH100(2); got.GPU != g || got.Topology != topo {
		t.Errorf("DGXH100(2) differs from h100-sxm on dgx-h100x2:\n got %+v\nwant %+v %+v", got, g, topo)
	}
	h200, _, err := configs.LoadSystem("h200-sxm", "dgx-h100x2")
	if err != nil {
		t.Fatal(err)
	}
	if got := topologytest.H200SXM(); got != h200 {
		t.Errorf("H200SXM differs from h200-sxm:\n got %+v\nwant %+v", got, h200)
	}
	_, nvl16, err := configs.LoadSystem("h100-sxm", "nvl16")
	if err != nil {
		t.Fatal(err)
	}
	if got := topologytest.H200Node().Topology.Intra; got != nvl16.Intra {
		t.Errorf("H200Node's NVSwitch path %+v differs from nvl16's %+v", got, nvl16.Intra)
	}
}

// The name table that discovery fills SMs and L2 from agrees with the
// hardware presets it names.
func TestGPUModelsMatchPresets(t *testing.T) {
	for _, m := range topology.GPUModels() {
		if m.Preset == "" {
			continue
		}
		g, _, err := configs.LoadSystem(m.Preset, "dgx-h100x2")
		if err != nil {
			t.Errorf("%s: %v", m.Model, err)
			continue
		}
		if g.SMs != m.SMs || g.L2Bytes != m.L2Bytes {
			t.Errorf("%s: table says %d SMs, %d B L2; preset %s says %d, %d", m.Model, m.SMs, m.L2Bytes, m.Preset, g.SMs, g.L2Bytes)
		}
	}
}

func TestSystemsValidate(t *testing.T) {
	for name, s := range map[string]topology.System{
		"DGXH100(1)": topologytest.DGXH100(1),
		"DGXH100(4)": topologytest.DGXH100(4),
		"H200Node":   topologytest.H200Node(),
		"PCIeBox8":   topologytest.PCIeBox8(),
	} {
		if err := s.GPU.Validate("hardware"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := s.Topology.Validate("topology"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Hand-derived: 18 × 25 GB/s; 400 Gb/s / 8; 32 GT/s × 16 × 128/130 / 8.
	if d := topologytest.DGXH100(4); d.Topology.Size() != 32 || d.Topology.Intra.BytesPerS != 450e9 || d.Topology.Inter.BytesPerS != 50e9 {
		t.Errorf("DGXH100(4) = %+v", d.Topology)
	}
	if p := topologytest.PCIeBox8().Topology.Intra; p.Class != topology.PCIe || math.Abs(p.BytesPerS-32e9*16*128/130/8) > 1 || p.Switch {
		t.Errorf("PCIeBox8 intra = %+v", p)
	}
}
