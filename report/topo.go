package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/graph/encoding/dot"

	"github.com/partbench/partbench/topology"
)

// TopoView is what partbench topo prints about a machine or a preset.
type TopoView struct {
	Schema string `json:"schema"` // TopoSchema
	Source string `json:"source"` // "nvml" or "preset"
	Name   string `json:"name"`
	// Hardware is the hardware preset a topology preset is shown on.
	Hardware string `json:"hardware_preset,omitempty"`
	// Machine is what NVML reported; nil for a preset.
	Machine *topology.Machine `json:"machine,omitempty"`
	// System is the preset, or the machine converted with its hardware
	// preset (absent when that fails; Notes says why).
	System *topology.System `json:"system,omitempty"`
	// Labels name the matrix rows and columns.
	Labels []string       `json:"labels"`
	Matrix [][]string     `json:"matrix"`
	Paths  []TopoPath     `json:"paths"`
	Notes  []string       `json:"notes,omitempty"`
	Graph  topology.Graph `json:"graph"`
}

// TopoPath is one path class partbench models, with its figures.
type TopoPath struct {
	Between   string             `json:"between"`
	Class     topology.LinkClass `json:"class"`
	Name      string             `json:"name"`
	BytesPerS float64            `json:"bytes_per_s"`
	LatencyS  float64            `json:"latency_s"`
	NVSwitch  bool               `json:"nvswitch"`
}

func topoPathOf(between string, l topology.Link) TopoPath {
	return TopoPath{Between: between, Class: l.Class, Name: l.Name, BytesPerS: l.BytesPerS, LatencyS: l.LatencyS, NVSwitch: l.Switch}
}

// TopoPresetView is the view of a topology preset on a hardware preset:
// one node's GPUs and NICs with nvidia-smi topo -m's codes (the nodes of a
// preset are alike), and the paths partbench models within and between
// nodes.
func TopoPresetView(preset, hardware string, sys topology.System) TopoView {
	t := sys.Topology
	v := TopoView{Source: "preset", Name: preset, Hardware: hardware, System: &sys, Graph: t.Graph()}
	v.Labels, v.Matrix = presetSMIMatrix(t)
	if t.GPUsPerNode > 1 {
		v.Paths = append(v.Paths, topoPathOf("GPUs of one node", t.Intra))
	}
	if t.Nodes > 1 {
		v.Paths = append(v.Paths, topoPathOf("GPUs of different nodes", t.Inter))
	}
	return v
}

// nvlinkBytesPerSPerLink is one NVLink's bandwidth per direction: 25 GB/s
// for NVLink 3 and 4 (A100: 12 links, 300 GB/s; H100: 18 links, 450 GB/s
// per direction, NVIDIA datasheets). NV# counts links of this size.
const nvlinkBytesPerSPerLink = 25e9

// smiCode is nvidia-smi's code for an intra-node path of a preset: NV#
// (# links) for NVLink, PIX for PCIe through one switch, PHB otherwise.
func smiCode(l topology.Link) string {
	switch l.Class {
	case topology.NVLink:
		return fmt.Sprintf("NV%d", max(1, int(l.BytesPerS/nvlinkBytesPerSPerLink+0.5)))
	case topology.PCIe:
		if strings.Contains(strings.ToLower(l.Name), "switch") {
			return string(topology.PIX)
		}
		return string(topology.PHB)
	}
	return string(topology.SYS)
}

// presetSMIMatrix is one node of t as nvidia-smi topo -m prints it: GPU
// rows, then one NIC per GPU when the preset has more than one node (its
// network path is per GPU, rail-aligned): GPU i and NIC i share a PCIe
// switch (PIX); other GPU–NIC pairs, which the preset does not use, are SYS.
func presetSMIMatrix(t topology.Topology) ([]string, [][]string) {
	n, nics := t.GPUsPerNode, 0
	if t.Nodes > 1 {
		nics = n
	}
	var labels []string
	for i := 0; i < n; i++ {
		labels = append(labels, fmt.Sprintf("GPU%d", i))
	}
	for i := 0; i < nics; i++ {
		labels = append(labels, fmt.Sprintf("NIC%d", i))
	}
	m := make([][]string, n+nics)
	for a := range m {
		m[a] = make([]string, n+nics)
		for b := range m[a] {
			switch {
			case a == b:
				m[a][b] = "X"
			case a < n && b < n:
				m[a][b] = smiCode(t.Intra)
			case a%n == b%n: // GPU i and NIC i
				m[a][b] = string(topology.PIX)
			default:
				m[a][b] = string(topology.SYS)
			}
		}
	}
	return labels, m
}

// TopoMachineView is the view of a discovered machine; lookup resolves its
// hardware preset to a GPU (nil: none).
func TopoMachineView(m *topology.Machine, lookup topology.GPULookup) TopoView {
	v := TopoView{Source: "nvml", Name: m.Hostname, Machine: m, Matrix: m.Matrix(), Graph: m.Graph(), Notes: m.Notes()}
	for i := range m.GPUs {
		v.Labels = append(v.Labels, fmt.Sprintf("GPU%d", i))
	}
	if len(m.GPUs) > 1 {
		v.Paths = append(v.Paths, topoPathOf("GPUs of this machine", m.IntraLink()))
	}
	if t, g, err := m.Topology(lookup); err == nil {
		v.System = &topology.System{GPU: g, Topology: t}
	} else if !errors.Is(err, topology.ErrNoPreset) { // Notes already says so
		v.Notes = append(v.Notes, "no system to model: "+err.Error())
	}
	return v
}

// TopoSchema names the JSON layout of partbench topo.
const TopoSchema = "partbench.topo/v1"

// TopoJSON writes the view as indented JSON.
func TopoJSON(w io.Writer, v TopoView) error {
	v.Schema = TopoSchema
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// TopoTable writes the view as text: the header facts, the matrix with its
// legend, the GPUs, the modelled paths and the notes.
func TopoTable(w io.Writer, v TopoView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	m := v.Machine
	if m != nil {
		fmt.Fprintf(tw, "host %s  driver %s  CUDA %s  NVML %s  hardware preset %s\n\n",
			topoOrDash(m.Hostname), topoOrDash(m.DriverVersion), topoOrDash(topology.CUDAVersionString(m.CUDADriverVersion)), topoOrDash(m.NVMLVersion), topoOrDash(m.HardwarePreset))
	} else {
		fmt.Fprintf(tw, "preset %s: %d node(s) × %d GPUs of %s (hardware preset %s)\n\n", v.Name, v.System.Topology.Nodes, v.System.Topology.GPUsPerNode, v.System.GPU.Name, v.Hardware)
	}

	// The matrix, as nvidia-smi topo -m lays it out.
	fmt.Fprintln(tw, "\t"+strings.Join(v.Labels, "\t")+"\tCPU Affinity\tNUMA Affinity")
	for i, row := range v.Matrix {
		fmt.Fprint(tw, v.Labels[i]+"\t"+strings.Join(row, "\t"))
		if m != nil && i < len(m.GPUs) {
			d := m.GPUs[i]
			fmt.Fprintf(tw, "\t%s\t%s", topoOrDash(d.CPUAffinity), topoNUMA(d.NUMANode))
		} else if strings.HasPrefix(v.Labels[i], "GPU") {
			fmt.Fprint(tw, "\tN/A\tN/A") // a preset knows no CPU cores or NUMA nodes
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw)
	if m == nil && v.System.Topology.Nodes > 1 {
		t := v.System.Topology
		fmt.Fprintf(tw, "One node of %d alike; GPUs of different nodes reach each other through their own NICs: %s.\n\n", t.Nodes, t.Inter.Name)
	}
	fmt.Fprintln(tw, "Legend:")
	fmt.Fprintln(tw)
	for _, line := range topoLegend(m != nil) {
		fmt.Fprintln(tw, "  "+line)
	}
	if m == nil && v.System.Topology.Nodes > 1 {
		fmt.Fprintln(tw, "\nNIC Legend:")
		fmt.Fprintln(tw)
		for i := 0; i < v.System.Topology.GPUsPerNode; i++ {
			fmt.Fprintf(tw, "  NIC%d: network port of GPU%d (%s)\n", i, i, v.System.Topology.Inter.Name)
		}
		fmt.Fprintln(tw, "  (the preset routes GPU i through NIC i only; SYS marks GPU–NIC pairs it does not use)")
	}
	fmt.Fprintln(tw)

	if m != nil {
		fmt.Fprintln(tw, "GPU\tName\tMemory (GB)\tSMs\tMax SM clock (MHz)\tMax mem clock (MHz)\tL2 (MB)\tPCIe max\tPCIe now\tNUMA\tMIG\tCC\tNVLinks (to NVSwitch)")
		for _, d := range m.GPUs {
			active, sw := d.ActiveNVLinks()
			fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%s\t%s\t%s\tGen%d x%d\tGen%d x%d\t%s\t%s\t%s\t%d (%d)\n",
				d.Index, d.Name, float64(d.MemoryBytes)/1e9, topoInt(d.SMs), topoInt(d.MaxSMClockMHz), topoInt(d.MaxMemClockMHz),
				topoMB(d.L2Bytes), d.PCIeMaxGen, d.PCIeMaxWidth, d.PCIeGen, d.PCIeWidth, topoNUMA(d.NUMANode), d.MIG,
				topoOrDash(d.ComputeCapability()), active, sw)
		}
	} else {
		g := v.System.GPU
		fmt.Fprintln(tw, "GPU (each)\tHBM (GB)\tHBM (TB/s)\tBF16 dense (TFLOP/s)\tSMs\tL2 (MB)")
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.1f\t%d\t%s\n", g.Name, float64(g.HBMBytes)/1e9, g.HBMBytesPerS/1e12, g.BF16FLOPsPerS/1e12, g.SMs, topoMB(g.L2Bytes))
	}
	fmt.Fprintln(tw)

	fmt.Fprintln(tw, "Path partbench models\tClass\tLink\tGB/s per direction\tLatency (µs)\tNVSwitch reduction")
	for _, p := range v.Paths {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", p.Between, p.Class, p.Name,
			strconv.FormatFloat(p.BytesPerS/1e9, 'f', 1, 64), strconv.FormatFloat(p.LatencyS*1e6, 'g', 3, 64), p.NVSwitch)
	}
	if len(v.Paths) == 0 {
		fmt.Fprintln(tw, "(one GPU: no path)")
	}
	if len(v.Notes) > 0 {
		fmt.Fprintln(tw)
		for _, n := range v.Notes {
			fmt.Fprintln(tw, "note: "+n)
		}
	}
	return tw.Flush()
}

// topoLegend explains the matrix entries in nvidia-smi topo -m's words.
func topoLegend(machine bool) []string {
	out := []string{"X    = Self"}
	for i := len(topology.PCIeLevels) - 1; i >= 0; i-- {
		l := topology.PCIeLevels[i]
		out = append(out, fmt.Sprintf("%-4s = Connection traversing %s", l, l.Describe()))
	}
	nv := "NV#  = Connection traversing a bonded set of # NVLinks (directly or through an NVSwitch)"
	if !machine {
		nv += "; # = bandwidth / 25 GB/s per link"
	}
	return append(out, nv)
}

// TopoDOT writes the graph for Graphviz through gonum's DOT encoder: one
// cluster per group (node or NUMA node), NVLink edges green and bold, PCIe
// dashed, network blue.
func TopoDOT(w io.Writer, g topology.Graph) error {
	b, err := dot.Marshal(newDOTGraph(g), g.Name, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func topoDOTShape(kind string) string {
	switch kind {
	case topology.NodeGPU:
		return "shape=box style=filled fillcolor=\"#e8f5d0\""
	case topology.NodeNVSwitch:
		return "shape=hexagon style=filled fillcolor=\"#76b900\" fontcolor=white"
	case topology.NodePCIe:
		return "shape=ellipse"
	case topology.NodeNIC:
		return "shape=diamond"
	case topology.NodeNetwork:
		return "shape=doubleoctagon"
	}
	return ""
}

func topoDOTEdge(c topology.LinkClass) string {
	switch c {
	case topology.NVLink:
		return "color=\"#76b900\" penwidth=2"
	case topology.PCIe:
		return "style=dashed color=gray40"
	case topology.Network:
		return "color=\"#1f5fa8\""
	}
	return ""
}

func topoOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func topoInt(v int) string {
	if v <= 0 {
		return "-"
	}
	return strconv.Itoa(v)
}

func topoMB(b int64) string {
	if b <= 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(b)/1e6, 'f', 1, 64)
}

func topoNUMA(n int) string {
	if n < 0 {
		return "N/A"
	}
	return strconv.Itoa(n)
}

// TopoGrids is the view as tables (markdown, csv): the matrix, the GPUs
// and the modelled paths; notes ride on the last.
func TopoGrids(v TopoView) []Grid {
	mx := Grid{Title: "GPU topology " + v.Name, Header: append([]string{""}, v.Labels...)}
	for i, row := range v.Matrix {
		mx.Rows = append(mx.Rows, append([]string{v.Labels[i]}, row...))
	}
	mx.Notes = topoLegend(v.Machine != nil)
	paths := Grid{Title: "Paths partbench models", Header: []string{"path", "class", "link", "GB/s per direction", "latency (µs)", "NVSwitch reduction"}}
	for _, p := range v.Paths {
		paths.Rows = append(paths.Rows, []string{p.Between, string(p.Class), p.Name,
			strconv.FormatFloat(p.BytesPerS/1e9, 'f', 1, 64), strconv.FormatFloat(p.LatencyS*1e6, 'g', 3, 64), strconv.FormatBool(p.NVSwitch)})
	}
	paths.Notes = v.Notes
	return []Grid{mx, paths}
}
