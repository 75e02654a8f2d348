package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/nvmldiscover"
	"github.com/partbench/partbench/topology/topologytest"
)

// cannedPresets answers the preset resolver from the canned systems.
func cannedPresets(hardware, topo string) (topology.System, error) {
	switch {
	case hardware == "h100-sxm" && topo == "dgx-h100x2":
		return topologytest.DGXH100(2), nil
	case hardware == "h100-sxm" && topo == "pcie-box8":
		return topologytest.PCIeBox8(), nil
	case hardware == "h200-sxm":
		s := topologytest.H200Node()
		return s, nil
	}
	return topology.System{}, errors.New("unknown preset " + hardware + "/" + topo)
}

func runTopo(t *testing.T, o *topoOptions, args ...string) (string, error) {
	t.Helper()
	if o == nil {
		o = &topoOptions{discover: nvmldiscover.DiscoverLocal, resolve: cannedPresets}
	}
	cmd := o.command()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

func TestTopoPresetTable(t *testing.T) {
	out, err := runTopo(t, nil, "--preset", "dgx-h100x2")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	// One node as nvidia-smi topo -m shows it: GPU3 has 18 NVLinks (450 GB/s
	// / 25 GB/s per link) to the other 7 GPUs, shares a PCIe switch with its
	// own NIC3 (PIX), and the preset knows no CPU or NUMA affinity.
	var row9 string
	for _, l := range lines {
		if strings.HasPrefix(l, "GPU3 ") {
			row9 = strings.Join(strings.Fields(l), " ")
		}
	}
	want9 := "GPU3 NV18 NV18 NV18 X NV18 NV18 NV18 NV18 SYS SYS SYS PIX SYS SYS SYS SYS N/A N/A"
	if row9 != want9 {
		t.Errorf("row of GPU3:\n got %q\nwant %q\n%s", row9, want9, out)
	}
	for _, s := range []string{
		"preset dgx-h100x2: 2 node(s) × 8 GPUs of H100-SXM5-80GB (hardware preset h100-sxm)",
		"NV#  = Connection traversing a bonded set of # NVLinks", "NIC3: network port of GPU3 (NDR InfiniBand 400 Gb/s",
		"H100-SXM5-80GB  85.5",                               // HBM 85,520,809,984 B = 85.5 GB
		"GPUs of one node", "NVLink 4 via NVSwitch", "450.0", // 18 × 25 GB/s
		"GPUs of different nodes", "50.0", // 400 Gb/s / 8
	} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
}

func TestTopoPresetJSONAndDOT(t *testing.T) {
	out, err := runTopo(t, nil, "--preset", "dgx-h100x2", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Source string     `json:"source"`
		Matrix [][]string `json:"matrix"`
		Paths  []struct {
			Class     string  `json:"class"`
			BytesPerS float64 `json:"bytes_per_s"`
			NVSwitch  bool    `json:"nvswitch"`
		} `json:"paths"`
		System *topology.System `json:"system"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Source != "preset" || len(v.Matrix) != 16 || v.Matrix[0][15] != "SYS" || v.Matrix[3][4] != "NV18" || v.Matrix[3][11] != "PIX" {
		t.Errorf("json: source %q, matrix %d rows", v.Source, len(v.Matrix))
	}
	if len(v.Paths) != 2 || v.Paths[0].Class != "nvlink" || v.Paths[0].BytesPerS != 450e9 || !v.Paths[0].NVSwitch || v.Paths[1].BytesPerS != 50e9 {
		t.Errorf("json paths = %+v", v.Paths)
	}
	if v.System == nil || v.System.Topology != topologytest.DGXH100(2).Topology {
		t.Errorf("json system = %+v", v.System)
	}

	out, err = runTopo(t, nil, "--preset", "dgx-h100x2", "--format", "dot")
	if err != nil {
		t.Fatal(err)
	}
	// Two node boxes, an NVSwitch in each, 16 NICs into one network
	// (gonum's DOT encoder: one attribute per line).
	for s, n := range map[string]int{
		`strict graph "dgx-h100x2" {`:         1,
		`subgraph cluster_`:                   2,
		"label=NVSwitch\n    shape=hexagon":   2,
		"shape=diamond":                       16,
		"-- network [\n    label=\"50 GB/s\"": 16,
		"n1nvswitch -- n1gpu":                 8, // the hub first: its GPUs drawn in order
	} {
		if got := strings.Count(out, s); got != n {
			t.Errorf("dot: %d × %q, want %d\n%s", got, s, n, out)
		}
	}
	if !strings.HasSuffix(out, "}\n") {
		t.Errorf("dot not closed:\n%s", out)
	}
}

func TestTopoPresetSaveAndErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "topo.toml")
	if _, err := runTopo(t, nil, "--preset", "pcie-box8", "--save", file); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hardware struct{ Preset string } `toml:"hardware"`
		Topology struct{ Preset string } `toml:"topology"`
	}
	if _, err := toml.DecodeFile(file, &got); err != nil || got.Hardware.Preset != "h100-sxm" || got.Topology.Preset != "pcie-box8" {
		t.Errorf("saved preset sections: %+v, %v", got, err)
	}
	if _, err := runTopo(t, nil, "--preset", "nope"); err == nil || !strings.Contains(err.Error(), "unknown preset") {
		t.Errorf("unknown preset: %v", err)
	}
	if _, err := runTopo(t, nil, "--preset", "dgx-h100x2", "--format", "yaml"); err == nil || !strings.Contains(err.Error(), "table, markdown, csv, json, dot") {
		t.Errorf("bad format: %v", err)
	}
	if _, err := runTopo(t, &topoOptions{discover: nvmldiscover.DiscoverLocal}, "--preset", "dgx-h100x2"); err == nil {
		t.Error("no resolver: want an error")
	}
}

// Without --preset on a machine without NVML: one line naming the cause and
// a preset to use instead, and exit status 2.
func TestTopoNoGPU(t *testing.T) {
	if m, err := nvmldiscover.DiscoverLocal(); err == nil {
		t.Skipf("this machine has %d GPUs; the no-GPU path needs a machine without NVML", len(m.GPUs))
	}
	file := filepath.Join(t.TempDir(), "topo.toml")
	_, err := runTopo(t, nil, "--save", file)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != topoExitNoGPU {
		t.Fatalf("err = %v, want exit status %d", err, topoExitNoGPU)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "--preset dgx-h100x2") || !errors.Is(err, topology.ErrNoGPU) {
		t.Errorf("message %q: want one line suggesting --preset dgx-h100x2", msg)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("a failed discovery wrote a file")
	}
}
