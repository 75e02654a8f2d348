//go:build cgo

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/nvmldiscover"
	"github.com/partbench/partbench/topology/nvmldiscover/nvmltest"
)

func fakeMachine(lib nvml.Interface) *topoOptions {
	return &topoOptions{resolve: cannedPresets, discover: func() (*topology.Machine, error) {
		m, err := nvmldiscover.Discover(lib)
		if m != nil {
			m.Hostname = "dgx01"
		}
		return m, err
	}}
}

func TestTopoMachineTable(t *testing.T) {
	out, err := runTopo(t, fakeMachine(nvmltest.DGXH100NVML()))
	if err != nil {
		t.Fatal(err)
	}
	var row3 string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "GPU3 ") {
			row3 = strings.Join(strings.Fields(l), " ")
		}
	}
	// As nvidia-smi topo -m on a DGX H100, with CPU and NUMA affinity.
	if want := "GPU3 NV18 NV18 NV18 X NV18 NV18 NV18 NV18 0-55,112-167 0"; row3 != want {
		t.Errorf("row of GPU3:\n got %q\nwant %q\n%s", row3, want, out)
	}
	for _, s := range []string{
		"host dgx01  driver 550.54.15  CUDA 12.4  NVML 12.550.54.15  hardware preset h100-sxm",
		"NV#  = Connection traversing a bonded set of # NVLinks", "SYS  = Connection traversing PCIe and the link between NUMA nodes",
		// GPU 7: 81,559 MiB = 85.5 GB, 132 SMs, clocks, 50 MiB = 52.4 MB L2, Gen5 x16, NUMA 1, 18 links all to NVSwitch.
		"7    NVIDIA H100 80GB HBM3  85.5         132  1980", "52.4", "Gen5 x16", "disabled", "9.0", "18 (18)",
		"GPUs of this machine", "NVLink 4 via NVSwitch, 18 links", "450.0", "1",
		"note: NVML sees no network",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "no system to model") {
		t.Errorf("the h100-sxm preset should resolve:\n%s", out)
	}
}

func TestTopoMachinePCIeBox(t *testing.T) {
	out, err := runTopo(t, fakeMachine(nvmltest.PCIeBox8NVML()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"hardware preset -", "GPU5  SYS   SYS   SYS   SYS   PIX   X     PIX   PIX",
		"Gen1 x16",                   // GPU 2 idles at Gen1
		"PCIe Gen5 x16, SYS", "63.0", // 32 GT/s × 16 × 128/130 / 8
		`no hardware preset matches "NVIDIA H100 PCIe": name one (--hardware`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	// Naming the hardware makes it modelable.
	out, err = runTopo(t, fakeMachine(nvmltest.PCIeBox8NVML()), "--hardware", "h100-sxm", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v report.TopoView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.System == nil || v.System.GPU.SMs != 114 || v.System.Topology.Intra.Class != topology.PCIe || v.Machine.GPUs[2].PCIeGen != 1 {
		t.Errorf("json view: %+v", v.System)
	}
}

func TestTopoMachineDOTAndSave(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mine.toml")
	out, err := runTopo(t, fakeMachine(nvmltest.DGXH100NVML()), "--format", "dot", "--save", file)
	if err != nil {
		t.Fatal(err)
	}
	// 8 GPUs in two NUMA boxes, 4 NVSwitch chips, links split 5+4+4+5.
	for s, n := range map[string]int{
		`subgraph cluster_`:            2,
		`shape=hexagon`:                4,
		"[\n    label=\"5× NVLink 4\"": 16,
		"[\n    label=\"4× NVLink 4\"": 16,
		`style=dashed`:                 0, // no PCIe-only pair
		"\n  nvswitch0 -- gpu0 [":      1, // the hub first: its GPUs drawn in order
	} {
		if got := strings.Count(out, s); got != n {
			t.Errorf("dot: %d × %q, want %d\n%s", got, s, n, out)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hardware struct {
			Preset string `toml:"preset"`
			SMs    int    `toml:"sms"`
		} `toml:"hardware"`
		Topology topology.Topology `toml:"topology"`
	}
	if _, err := toml.Decode(string(data), &got); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if got.Hardware.Preset != "h100-sxm" || got.Hardware.SMs != 132 || got.Topology.Name != "discovered-dgx01" || got.Topology.Intra.BytesPerS != 450e9 || !got.Topology.Intra.Switch {
		t.Errorf("saved: %+v\n%s", got, data)
	}
}

func TestTopoMachineInitFails(t *testing.T) {
	_, err := runTopo(t, fakeMachine(nvmltest.NoNVML()))
	if err == nil {
		t.Fatal("want an error")
	}
	if !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") || !strings.Contains(err.Error(), "--preset dgx-h100x2") {
		t.Errorf("err = %v", err)
	}
	if e, ok := err.(*exitError); !ok || e.code != topoExitNoGPU {
		t.Errorf("err = %#v, want exit status %d", err, topoExitNoGPU)
	}
}
