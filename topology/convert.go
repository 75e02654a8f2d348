package topology

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNoPreset says no hardware preset describes a discovered GPU; name one
// (Machine.HardwarePreset, partbench topo --hardware).
var ErrNoPreset = errors.New("no hardware preset for this GPU")

// GPULookup returns the GPU of a hardware preset by name. Package topology
// cannot resolve presets itself (configs imports topology), so the caller
// passes one backed by configs.LoadSystem.
type GPULookup func(preset string) (GPU, error)

// PairLink is the path partbench models between GPUs i and j of the machine:
// NVLink at links × per-link bandwidth of the NVLink generation, through an
// NVSwitch or direct; otherwise PCIe at the slower GPU's maximum generation ×
// width. ok is false for i == j or an index out of range.
func (m *Machine) PairLink(i, j int) (l Link, ok bool) {
	if i == j || i < 0 || j < 0 || i >= len(m.GPUs) || j >= len(m.GPUs) {
		return Link{}, false
	}
	a, b := m.GPUs[i], m.GPUs[j]
	p := m.pair(i, j)
	if p.NVLinks > 0 {
		gen := min(a.NVLinkVersion, b.NVLinkVersion)
		via := "direct"
		if p.ViaSwitch {
			via = "via NVSwitch"
		}
		name := fmt.Sprintf("NVLink %d %s, %d links", gen, via, p.NVLinks)
		// Only a third-generation NVSwitch (NVLink 4, Hopper) reduces in the
		// switch (NVLink SHARP), which is what Link.Switch promises.
		sharp := p.ViaSwitch && gen >= 4
		if p.ViaSwitch && !sharp {
			name += " (no in-switch reduction)"
		}
		return Link{
			Class:     NVLink,
			Name:      name,
			BytesPerS: float64(p.NVLinks) * NVLinkBytesPerSPerLink(gen),
			LatencyS:  NVLinkLatencyS,
			Switch:    sharp,
		}, true
	}
	bwA, bwB := PCIeBytesPerS(a.PCIeMaxGen, a.PCIeMaxWidth), PCIeBytesPerS(b.PCIeMaxGen, b.PCIeMaxWidth)
	gen, width := a.PCIeMaxGen, a.PCIeMaxWidth
	if bwB < bwA {
		gen, width = b.PCIeMaxGen, b.PCIeMaxWidth
	}
	level := p.PCIe
	if level == "" {
		level = "unknown level"
	}
	name := fmt.Sprintf("PCIe Gen%d x%d, %s", gen, width, level)
	if p.P2PRead != "" && p.P2PRead != P2POK {
		name += ", no peer-to-peer (" + string(p.P2PRead) + "): staged through host memory"
	}
	return Link{Class: PCIe, Name: name, BytesPerS: min(bwA, bwB), LatencyS: PCIeLatencyS}, true
}

// IntraLink is the one path between two GPUs that a Topology holds for the
// machine: the slowest pair's (by bandwidth, then by PCIe distance), so that
// a collective over every GPU is not modelled faster than its slowest hop.
// It is the zero Link for fewer than two GPUs; Notes says when pairs differ.
func (m *Machine) IntraLink() Link {
	l, _, _ := m.worstPair()
	return l
}

// worstPair is the slowest pair and its link; i, j are -1 when there is none.
func (m *Machine) worstPair() (worst Link, wi, wj int) {
	wi, wj = -1, -1
	var worstLevel PCIeLevel
	for i := range m.GPUs {
		for j := i + 1; j < len(m.GPUs); j++ {
			l, _ := m.PairLink(i, j)
			lv := m.pair(i, j).PCIe
			if wi < 0 || l.BytesPerS < worst.BytesPerS ||
				(l.BytesPerS == worst.BytesPerS && l.Class == PCIe && lv.rank() > worstLevel.rank()) {
				worst, worstLevel, wi, wj = l, lv, i, j
			}
		}
	}
	return worst, wi, wj
}

// intraDerivation says how IntraLink's bandwidth is computed.
func (m *Machine) intraDerivation() string {
	l, i, j := m.worstPair()
	if i < 0 {
		return ""
	}
	if l.Class == NVLink {
		a, b := m.GPUs[i], m.GPUs[j]
		gen := min(a.NVLinkVersion, b.NVLinkVersion)
		return fmt.Sprintf("%d links × %g GB/s per link per direction (NVLink %d)", m.pair(i, j).NVLinks, NVLinkBytesPerSPerLink(gen)/1e9, gen)
	}
	d := m.GPUs[i]
	if PCIeBytesPerS(m.GPUs[j].PCIeMaxGen, m.GPUs[j].PCIeMaxWidth) < PCIeBytesPerS(d.PCIeMaxGen, d.PCIeMaxWidth) {
		d = m.GPUs[j]
	}
	g := pcieGenerations[d.PCIeMaxGen]
	return fmt.Sprintf("PCIe Gen%d: %g GT/s × %d lanes, %s encoding, / 8 bits", d.PCIeMaxGen, g.transfersPerS/1e9, d.PCIeMaxWidth, g.encodingName)
}

// NodeTopology is the machine as a one-node Topology: its GPUs and IntraLink.
// NVML sees no network, so Inter is left empty (add it for more nodes). It
// fails when the GPUs are not all of one model.
func (m *Machine) NodeTopology() (Topology, error) {
	if len(m.GPUs) == 0 {
		return Topology{}, errors.New("machine has no GPUs")
	}
	for _, d := range m.GPUs[1:] {
		if d.Name != m.GPUs[0].Name {
			return Topology{}, fmt.Errorf("GPUs differ (%q and %q): partbench models one GPU model per system", m.GPUs[0].Name, d.Name)
		}
	}
	t := Topology{Name: m.topologyName(), Nodes: 1, GPUsPerNode: len(m.GPUs), Intra: m.IntraLink()}
	if err := t.Validate("topology"); err != nil {
		return Topology{}, err
	}
	return t, nil
}

// GPUSpec is the GPU partbench models for the machine: the hardware preset's
// (Machine.HardwarePreset, resolved by lookup) with what NVML measured in
// place of the preset's figures: name, memory, SM count and, when known, L2.
func (m *Machine) GPUSpec(lookup GPULookup) (GPU, error) {
	if len(m.GPUs) == 0 {
		return GPU{}, errors.New("machine has no GPUs")
	}
	d := m.GPUs[0]
	if m.HardwarePreset == "" {
		return GPU{}, fmt.Errorf("%w: %q is none partbench knows by name; name one (--hardware, e.g. h100-sxm)", ErrNoPreset, d.Name)
	}
	if lookup == nil {
		return GPU{}, fmt.Errorf("no way to resolve hardware preset %q", m.HardwarePreset)
	}
	g, err := lookup(m.HardwarePreset)
	if err != nil {
		return GPU{}, err
	}
	g = m.withFacts(g)
	if err := g.Validate("hardware"); err != nil {
		return GPU{}, fmt.Errorf("preset %q with the discovered figures: %w", m.HardwarePreset, err)
	}
	return g, nil
}

// withFacts puts what NVML reported for GPU 0 into g.
func (m *Machine) withFacts(g GPU) GPU {
	d := m.GPUs[0]
	g.Name = d.Name
	if d.MemoryBytes > 0 {
		g.HBMBytes = d.MemoryBytes
	}
	if d.SMs > 0 {
		g.SMs = d.SMs
	}
	if d.L2Bytes > 0 {
		g.L2Bytes = d.L2Bytes
	}
	return g
}

// Topology converts the machine to the Topology and GPU a preset would give:
// NodeTopology and GPUSpec together. It fails where either does, and when a
// GPU runs in MIG mode (partbench partitions whole GPUs).
func (m *Machine) Topology(lookup GPULookup) (Topology, GPU, error) {
	t, err := m.NodeTopology()
	if err != nil {
		return Topology{}, GPU{}, err
	}
	for _, d := range m.GPUs {
		if d.MIG == MIGEnabled {
			return Topology{}, GPU{}, fmt.Errorf("GPU %d runs in MIG mode: partbench partitions whole GPUs (disable MIG or use a preset)", d.Index)
		}
	}
	g, err := m.GPUSpec(lookup)
	if err != nil {
		return Topology{}, GPU{}, err
	}
	return t, g, nil
}

// Notes are what the conversion to a Topology leaves out or assumes, one
// sentence each.
func (m *Machine) Notes() []string {
	var out []string
	kinds := map[string]bool{}
	for i := range m.GPUs {
		for j := i + 1; j < len(m.GPUs); j++ {
			l, _ := m.PairLink(i, j)
			kinds[fmt.Sprintf("%s %g", l.Name, l.BytesPerS)] = true
		}
	}
	if len(kinds) > 1 {
		out = append(out, fmt.Sprintf("pairs of GPUs are joined differently (%d kinds); the topology takes the slowest pair: %s", len(kinds), m.IntraLink().Name))
	}
	noL2 := map[string]bool{}
	for _, d := range m.GPUs {
		if d.MIG == MIGEnabled {
			out = append(out, fmt.Sprintf("GPU %d runs in MIG mode; partbench models whole GPUs", d.Index))
		}
		if d.MIGPending != "" && d.MIGPending != d.MIG {
			out = append(out, fmt.Sprintf("GPU %d: MIG mode becomes %s after the next GPU reset", d.Index, d.MIGPending))
		}
		if active, _ := d.ActiveNVLinks(); len(d.NVLinks) > active {
			out = append(out, fmt.Sprintf("GPU %d: %d of %d NVLinks are down", d.Index, len(d.NVLinks)-active, len(d.NVLinks)))
		}
		if d.L2Bytes == 0 && !noL2[d.Name] {
			noL2[d.Name] = true
			out = append(out, fmt.Sprintf("%s: L2 size unknown (NVML does not report it and the name table lacks the model)", d.Name))
		}
	}
	if len(m.GPUs) > 0 && m.HardwarePreset == "" {
		out = append(out, fmt.Sprintf("no hardware preset matches %q: name one (--hardware, e.g. h100-sxm) for the peaks NVML does not report", m.GPUs[0].Name))
	}
	out = append(out, "NVML sees no network: the topology has one node; add [topology.inter_node] and raise nodes for more")
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// topologyName names the topology after the host.
func (m *Machine) topologyName() string {
	h := strings.Trim(unsafeName.ReplaceAllString(m.Hostname, "-"), "-")
	if h == "" {
		return "discovered"
	}
	return "discovered-" + h
}
