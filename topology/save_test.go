//go:build cgo

package topology_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/nvmldiscover"
	"github.com/partbench/partbench/topology/nvmldiscover/nvmltest"
)

func discover(t *testing.T, lib nvml.Interface) *topology.Machine {
	t.Helper()
	m, err := nvmldiscover.Discover(lib)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func presetGPU(name string) (topology.GPU, error) {
	g, _, err := configs.LoadSystem(name, "dgx-h100x2")
	return g, err
}

// The saved sections decode strictly into the config's own section types
// and give back the Topology and GPU the conversion gives.
func TestSaveTOMLRoundTrip(t *testing.T) {
	for name, lib := range map[string]func() *topology.Machine{
		"dgx-h100": func() *topology.Machine { return discover(t, nvmltest.DGXH100NVML()) },
		"h200":     func() *topology.Machine { return discover(t, nvmltest.H200NodeNVML()) },
		"pcie-box": func() *topology.Machine {
			m := discover(t, nvmltest.PCIeBox8NVML())
			m.HardwarePreset = "h100-sxm" // as --hardware h100-sxm
			return m
		},
	} {
		m := lib()
		m.Hostname = "odd \"host\"\\name\nnext"
		var buf bytes.Buffer
		if err := m.SaveTOML(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got struct {
			Hardware configs.Hardware `toml:"hardware"`
			Topology configs.Topology `toml:"topology"`
		}
		md, err := toml.Decode(buf.String(), &got)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, buf.String())
		}
		if und := md.Undecoded(); len(und) > 0 {
			t.Errorf("%s: keys the config does not know: %v", name, und)
		}
		wantTopo, wantGPU, err := m.Topology(presetGPU)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Topology.Topology != wantTopo {
			t.Errorf("%s: topology\n got %+v\nwant %+v", name, got.Topology.Topology, wantTopo)
		}
		if got.Hardware.Preset != m.HardwarePreset {
			t.Errorf("%s: hardware preset %q, want %q", name, got.Hardware.Preset, m.HardwarePreset)
		}
		// The section overrides only what was discovered; on top of its preset
		// it is the GPU the conversion gives.
		base, err := presetGPU(got.Hardware.Preset)
		if err != nil {
			t.Fatal(err)
		}
		md, err = toml.Decode(buf.String(), &struct {
			Hardware *topology.GPU `toml:"hardware"`
		}{&base})
		if err != nil {
			t.Fatal(err)
		}
		_ = md
		if base != wantGPU {
			t.Errorf("%s: preset + saved overrides\n got %+v\nwant %+v", name, base, wantGPU)
		}

		// And a whole config built from it parses and validates.
		cfg := `version = 1
[model]
preset = "seed-dense16"
[workload]
batch = 8
context = 1024
output_tokens = 16
[parallel]
tp = 8
pp = 1
[run]
warmup = 1
iterations = 1
` + buf.String()
		c, err := configs.Parse(strings.NewReader(cfg), name+".toml")
		if err != nil {
			t.Fatalf("%s: the saved sections do not make a valid config: %v\n%s", name, err, buf.String())
		}
		if c.Topology.Topology != wantTopo || c.Hardware.GPU != wantGPU {
			t.Errorf("%s: parsed config differs:\n%+v\n%+v", name, c.Topology.Topology, c.Hardware.GPU)
		}
	}
}

func TestSaveTOMLWithoutPreset(t *testing.T) {
	m := discover(t, nvmltest.PCIeBox8NVML())
	var buf bytes.Buffer
	if err := m.SaveTOML(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "\n[hardware]") || !strings.Contains(out, `# [hardware]: no hardware preset matches "NVIDIA H100 PCIe"`) || !strings.Contains(out, "# sms = 114") {
		t.Errorf("want [hardware] as comments only:\n%s", out)
	}
	var got struct {
		Topology topology.Topology `toml:"topology"`
	}
	if _, err := toml.Decode(out, &got); err != nil {
		t.Fatal(err)
	}
	want, err := m.NodeTopology()
	if err != nil {
		t.Fatal(err)
	}
	if got.Topology != want {
		t.Errorf("topology\n got %+v\nwant %+v", got.Topology, want)
	}
}

func TestSaveTOMLSingleGPU(t *testing.T) {
	spec := nvmltest.DGXH100Spec()
	spec.GPUs = spec.GPUs[:1]
	m := discover(t, nvmltest.NewNVML(spec))
	var buf bytes.Buffer
	if err := m.SaveTOML(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "intra_node]") {
		t.Errorf("one GPU has no intra-node path:\n%s", buf.String())
	}
	if got := m.Matrix(); len(got) != 1 || got[0][0] != "X" {
		t.Errorf("Matrix = %v", got)
	}
	// Its links still go to switches, but no other GPU is there.
	if l := m.IntraLink(); l != (topology.Link{}) {
		t.Errorf("IntraLink = %+v, want none", l)
	}
}
