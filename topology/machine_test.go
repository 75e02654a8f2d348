package topology

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:1b:00.0": "00000000:1B:00.0",
		"0000:1B:00.0":     "00000000:1B:00.0",
		" 0001:c3:00.1 ":   "00000001:C3:00.1",
		"garbage":          "GARBAGE",
		"":                 "",
	} {
		if got := NormalizeBusID(in); got != want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCPUListAndBits(t *testing.T) {
	// Word 0 holds CPUs 0–3 and 8; word 1 holds CPU 64 and 65.
	bits := BitsSet([]uint64{0b1_0000_1111, 0b11})
	if want := []int{0, 1, 2, 3, 8, 64, 65}; !reflect.DeepEqual(bits, want) {
		t.Fatalf("BitsSet = %v, want %v", bits, want)
	}
	if got := CPUList(bits); got != "0-3,8,64-65" {
		t.Errorf("CPUList = %q, want 0-3,8,64-65", got)
	}
	if got := CPUList(nil); got != "" {
		t.Errorf("CPUList(nil) = %q, want empty", got)
	}
}

func TestCUDAVersionString(t *testing.T) {
	for v, want := range map[int]string{12040: "12.4", 11080: "11.8", 13000: "13.0", 0: ""} {
		if got := CUDAVersionString(v); got != want {
			t.Errorf("CUDAVersionString(%d) = %q, want %q", v, got, want)
		}
	}
}

// quad is four A100 SXM4 80GB as on an HGX A100 4-GPU board: every pair
// joined directly by 4 NVLink 3 links (12 per GPU), no NVSwitch; PCIe Gen4 x16.
func quad() *Machine {
	m := &Machine{Hostname: "quad box"}
	bus := []string{"00000000:07:00.0", "00000000:0B:00.0", "00000000:48:00.0", "00000000:4C:00.0"}
	for i := range bus {
		d := Device{Index: i, Name: "NVIDIA A100-SXM4-80GB", BusID: bus[i], MemoryBytes: 81920 << 20, SMs: 108, L2Bytes: 40 << 20,
			PCIeMaxGen: 4, PCIeMaxWidth: 16, NUMANode: i / 2, GPUNUMANode: -1, MIG: MIGDisabled, CCMajor: 8, NVLinkVersion: 3}
		for j := range bus {
			if j == i {
				continue
			}
			for k := 0; k < 4; k++ {
				// The far end's type is unknown here: the bus id alone says "GPU".
				d.NVLinks = append(d.NVLinks, DeviceLink{Link: len(d.NVLinks), Active: true, RemoteBusID: strings.ToLower(bus[j]), RemoteType: RemoteUnknown})
			}
		}
		m.GPUs = append(m.GPUs, d)
	}
	m.Pairs = pairs(4, func(i, j int) PCIeLevel {
		if i/2 == j/2 {
			return PXB
		}
		return SYS
	})
	m.HardwarePreset = "a100-sxm-80g"
	m.Resolve()
	return m
}

func pairs(n int, level func(i, j int) PCIeLevel) [][]Pair {
	p := make([][]Pair, n)
	for i := range p {
		p[i] = make([]Pair, n)
		for j := range p[i] {
			if i != j {
				p[i][j] = Pair{PCIe: level(i, j), P2PRead: P2POK, P2PNVLink: P2POK}
			}
		}
	}
	return p
}

func TestResolveDirectLinks(t *testing.T) {
	m := quad()
	want := [][]string{
		{"X", "NV4", "NV4", "NV4"},
		{"NV4", "X", "NV4", "NV4"},
		{"NV4", "NV4", "X", "NV4"},
		{"NV4", "NV4", "NV4", "X"},
	}
	if got := m.Matrix(); !reflect.DeepEqual(got, want) {
		t.Errorf("Matrix = %v, want %v", got, want)
	}
	if sw := m.NVSwitches(); len(sw) != 0 {
		t.Errorf("NVSwitches = %v, want none (direct links)", sw)
	}
	// 4 links × 25 GB/s (NVLink 3) = 100 GB/s per pair and direction; no switch.
	l := m.IntraLink()
	if l.Class != NVLink || l.BytesPerS != 100e9 || l.Switch || l.LatencyS != NVLinkLatencyS {
		t.Errorf("IntraLink = %+v, want nvlink 100e9 without switch", l)
	}
	if !strings.Contains(l.Name, "NVLink 3 direct, 4 links") {
		t.Errorf("IntraLink name %q", l.Name)
	}
	g := m.Graph()
	nv := 0
	for _, e := range g.Edges {
		if e.Class == NVLink && e.Label == "NV4" {
			nv++
		}
	}
	if nv != 6 { // 4·3/2 pairs
		t.Errorf("graph has %d NV4 edges, want 6: %+v", nv, g.Edges)
	}
}

func TestResolveSwitchByRemoteBus(t *testing.T) {
	// Two GPUs whose links reach the same non-GPU bus id, remote type unknown:
	// an NVSwitch. A third GPU's lone link to an unknown device is none.
	m := &Machine{}
	for i, bus := range []string{"0000:01:00.0", "0000:02:00.0", "0000:03:00.0"} {
		d := Device{Index: i, Name: "NVIDIA H100 80GB HBM3", BusID: bus, CCMajor: 9, NVLinkVersion: 4, MIG: MIGDisabled}
		remote := "0000:f0:00.0"
		if i == 2 {
			remote = "0000:f1:00.0"
		}
		for k := 0; k < 3; k++ {
			d.NVLinks = append(d.NVLinks, DeviceLink{Link: k, Active: true, RemoteBusID: remote, RemoteType: RemoteUnknown})
		}
		d.NVLinks = append(d.NVLinks, DeviceLink{Link: 3, Active: false, RemoteType: RemoteUnknown})
		m.GPUs = append(m.GPUs, d)
	}
	m.Pairs = pairs(3, func(i, j int) PCIeLevel { return NODE })
	m.Resolve()
	want := [][]string{
		{"X", "NV3", "NODE"},
		{"NV3", "X", "NODE"},
		{"NODE", "NODE", "X"},
	}
	if got := m.Matrix(); !reflect.DeepEqual(got, want) {
		t.Errorf("Matrix = %v, want %v", got, want)
	}
	if sw := m.NVSwitches(); !reflect.DeepEqual(sw, []string{"0000:f0:00.0"}) {
		t.Errorf("NVSwitches = %v, want [0000:f0:00.0]", sw)
	}
	if a, s := m.GPUs[0].ActiveNVLinks(); a != 3 || s != 3 {
		t.Errorf("GPU 0 active/switch links = %d/%d, want 3/3", a, s)
	}
	// The slowest pair is PCIe (NODE); GPU 2 has no PCIe figures, so the
	// bandwidth is 0 and NodeTopology refuses it.
	if _, err := m.NodeTopology(); err == nil || !strings.Contains(err.Error(), "bytes_per_s") {
		t.Errorf("NodeTopology without PCIe figures: err = %v, want a bytes_per_s error", err)
	}
	notes := strings.Join(m.Notes(), "\n")
	for _, s := range []string{"joined differently", "1 of 4 NVLinks are down", "no hardware preset"} {
		if !strings.Contains(notes, s) {
			t.Errorf("Notes lack %q:\n%s", s, notes)
		}
	}
}

func TestNVLinkP2PRefusedBySwitch(t *testing.T) {
	// Both GPUs on NVSwitch, but NVML says NVLink P2P is not supported between
	// them (e.g. a partitioned fabric): no NV entry, the PCIe level instead.
	m := &Machine{}
	for i := 0; i < 2; i++ {
		m.GPUs = append(m.GPUs, Device{Index: i, BusID: "0000:0" + string(rune('1'+i)) + ":00.0", NVLinks: []DeviceLink{{Active: true, RemoteType: RemoteSwitch}}})
	}
	m.Pairs = pairs(2, func(i, j int) PCIeLevel { return SYS })
	m.Pairs[0][1].P2PNVLink, m.Pairs[1][0].P2PNVLink = P2PUnsupported, P2PUnsupported
	m.Resolve()
	if got := m.Matrix()[0][1]; got != "SYS" {
		t.Errorf("matrix[0][1] = %q, want SYS", got)
	}
}

func TestGPUSpecAndTopology(t *testing.T) {
	m := quad()
	base := GPU{Name: "A100-SXM4-80GB", FP32FLOPsPerS: 19.5e12, FP16FLOPsPerS: 312e12, BF16FLOPsPerS: 312e12,
		HBMBytes: 1 << 30 * 80, HBMReservedBytes: 2 << 30, HBMBytesPerS: 2.039e12, L2Bytes: 1, L2UsableFraction: 1,
		L2BytesPerS: 4e12, SMs: 1, ComputeEfficiency: 0.7, HBMEfficiency: 0.9}
	var asked string
	lookup := func(p string) (GPU, error) { asked = p; return base, nil }
	topo, g, err := m.Topology(lookup)
	if err != nil {
		t.Fatal(err)
	}
	if asked != "a100-sxm-80g" {
		t.Errorf("looked up %q, want a100-sxm-80g", asked)
	}
	// The preset's peaks with NVML's name, memory and SMs and the table's L2.
	if g.Name != "NVIDIA A100-SXM4-80GB" || g.HBMBytes != 81920<<20 || g.SMs != 108 || g.L2Bytes != 40<<20 || g.FP16FLOPsPerS != 312e12 {
		t.Errorf("GPU = %+v", g)
	}
	if topo.Name != "discovered-quad-box" || topo.Nodes != 1 || topo.GPUsPerNode != 4 || topo.Intra.BytesPerS != 100e9 {
		t.Errorf("Topology = %+v", topo)
	}

	m.HardwarePreset = ""
	if _, _, err := m.Topology(lookup); !errors.Is(err, ErrNoPreset) || !strings.Contains(err.Error(), "--hardware") {
		t.Errorf("no preset: err = %v, want ErrNoPreset naming --hardware", err)
	}
	m.HardwarePreset = "a100-sxm-80g"
	m.GPUs[1].MIG = MIGEnabled
	if _, _, err := m.Topology(lookup); err == nil || !strings.Contains(err.Error(), "MIG") {
		t.Errorf("MIG: err = %v, want a MIG error", err)
	}
	m.GPUs[1].MIG = MIGDisabled
	m.GPUs[3].Name = "NVIDIA A100-SXM4-40GB"
	if _, err := m.NodeTopology(); err == nil || !strings.Contains(err.Error(), "GPUs differ") {
		t.Errorf("mixed GPUs: err = %v", err)
	}
	lookupErr := errors.New("unknown hardware preset")
	m.GPUs[3].Name = m.GPUs[0].Name
	if _, err := m.GPUSpec(func(string) (GPU, error) { return GPU{}, lookupErr }); !errors.Is(err, lookupErr) {
		t.Errorf("lookup error not passed on: %v", err)
	}
}

func TestTopologyMatrixAndGraph(t *testing.T) {
	topo := Topology{Name: "two", Nodes: 2, GPUsPerNode: 2,
		Intra: Link{Class: NVLink, Name: "NVLink 4 via NVSwitch", BytesPerS: 450e9, LatencyS: 1e-6, Switch: true},
		Inter: Link{Class: Network, Name: "NDR", BytesPerS: 50e9, LatencyS: 5e-6}}
	want := [][]string{
		{"X", "NVS", "NET", "NET"},
		{"NVS", "X", "NET", "NET"},
		{"NET", "NET", "X", "NVS"},
		{"NET", "NET", "NVS", "X"},
	}
	if got := topo.Matrix(); !reflect.DeepEqual(got, want) {
		t.Errorf("Matrix = %v, want %v", got, want)
	}
	g := topo.Graph()
	kinds := map[string]int{}
	for _, n := range g.Nodes {
		kinds[n.Kind]++
	}
	// 4 GPUs, one NVSwitch per node, one NIC per GPU, one network.
	if want := map[string]int{NodeGPU: 4, NodeNVSwitch: 2, NodeNIC: 4, NodeNetwork: 1}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("node kinds = %v, want %v", kinds, want)
	}
	// GPU→switch 4, GPU→NIC 4, NIC→network 4.
	if len(g.Edges) != 12 {
		t.Errorf("%d edges, want 12", len(g.Edges))
	}
	topo.Intra = Link{Class: PCIe, Name: "PCIe", BytesPerS: 63e9}
	topo.Nodes = 1
	if got := topo.Matrix()[0][1]; got != "PCI" {
		t.Errorf("PCIe entry %q, want PCI", got)
	}
	if g := topo.Graph(); len(g.Nodes) != 3 || g.Nodes[2].Kind != NodePCIe {
		t.Errorf("one PCIe node: %+v", g.Nodes)
	}
}
