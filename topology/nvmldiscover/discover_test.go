//go:build cgo

package nvmldiscover_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/nvmldiscover"
	"github.com/partbench/partbench/topology/nvmldiscover/nvmltest"
	"github.com/partbench/partbench/topology/topologytest"
)

func discover(t *testing.T, lib nvml.Interface) *topology.Machine {
	t.Helper()
	m, err := nvmldiscover.Discover(lib)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDiscoverDGXH100(t *testing.T) {
	m := discover(t, nvmltest.DGXH100NVML())
	// nvidia-smi topo -m on a DGX H100: every pair NV18 (18 links per GPU, all
	// into the NVSwitch fabric).
	want := [][]string{
		{"X", "NV18", "NV18", "NV18", "NV18", "NV18", "NV18", "NV18"},
		{"NV18", "X", "NV18", "NV18", "NV18", "NV18", "NV18", "NV18"},
		{"NV18", "NV18", "X", "NV18", "NV18", "NV18", "NV18", "NV18"},
		{"NV18", "NV18", "NV18", "X", "NV18", "NV18", "NV18", "NV18"},
		{"NV18", "NV18", "NV18", "NV18", "X", "NV18", "NV18", "NV18"},
		{"NV18", "NV18", "NV18", "NV18", "NV18", "X", "NV18", "NV18"},
		{"NV18", "NV18", "NV18", "NV18", "NV18", "NV18", "X", "NV18"},
		{"NV18", "NV18", "NV18", "NV18", "NV18", "NV18", "NV18", "X"},
	}
	if got := m.Matrix(); !reflect.DeepEqual(got, want) {
		t.Errorf("Matrix =\n%v\nwant\n%v", got, want)
	}
	if m.DriverVersion != "550.54.15" || m.CUDADriverVersion != 12040 || m.NVMLVersion != "12.550.54.15" {
		t.Errorf("versions: %q %d %q", m.DriverVersion, m.CUDADriverVersion, m.NVMLVersion)
	}
	if m.HardwarePreset != "h100-sxm" {
		t.Errorf("HardwarePreset = %q, want h100-sxm", m.HardwarePreset)
	}
	if sw := m.NVSwitches(); len(sw) != 4 {
		t.Errorf("NVSwitches = %v, want the 4 chips", sw)
	}
	g := m.GPUs[5]
	// SMs: attributes unsupported, 16,896 cores / 128 per SM (Hopper) = 132.
	if g.SMs != 132 || g.SMsFrom != "nvml cores" {
		t.Errorf("SMs = %d from %q, want 132 from nvml cores", g.SMs, g.SMsFrom)
	}
	if g.L2Bytes != 50<<20 || g.L2From != "name table" {
		t.Errorf("L2 = %d from %q, want 50 MiB from the name table", g.L2Bytes, g.L2From)
	}
	if g.Index != 5 || g.BusID != "00000000:AB:00.0" || g.MemoryBytes != 81559<<20 || g.ComputeCapability() != "9.0" {
		t.Errorf("GPU 5 = %+v", g)
	}
	if g.MaxSMClockMHz != 1980 || g.MaxMemClockMHz != 2619 || g.PCIeMaxGen != 5 || g.PCIeMaxWidth != 16 || g.PCIeGen != 5 || g.PCIeWidth != 16 {
		t.Errorf("GPU 5 clocks/PCIe = %+v", g)
	}
	if g.NUMANode != 1 || g.CPUAffinity != "56-111,168-223" || g.GPUNUMANode != -1 {
		t.Errorf("GPU 5 NUMA %d, CPUs %q, GPU NUMA %d; want 1, 56-111,168-223, -1", g.NUMANode, g.CPUAffinity, g.GPUNUMANode)
	}
	if g.MIG != topology.MIGDisabled || g.MIGPending != "" {
		t.Errorf("MIG %q pending %q, want disabled", g.MIG, g.MIGPending)
	}
	// NVLink: raw 7 from NVML, generation 4 from compute capability 9.0.
	if g.NVLinkVersion != 4 || g.NVLinkVersionNVML != 7 {
		t.Errorf("NVLink version %d (raw %d), want 4 (raw 7)", g.NVLinkVersion, g.NVLinkVersionNVML)
	}
	if a, s := g.ActiveNVLinks(); a != 18 || s != 18 {
		t.Errorf("links %d active, %d to a switch; want 18, 18", a, s)
	}
	p := m.Pairs[0][4]
	if !p.ViaSwitch || p.NVLinks != 18 || p.PCIe != topology.SYS || p.P2PRead != topology.P2POK || p.P2PNVLink != topology.P2POK {
		t.Errorf("pair 0-4 = %+v", p)
	}
	if p := m.Pairs[1][2]; p.PCIe != topology.NODE {
		t.Errorf("pair 1-2 PCIe %q, want NODE", p.PCIe)
	}
	// 18 links × 25 GB/s = 450 GB/s per direction through NVSwitch, with NVLS:
	// the dgx-h100x2 preset's intra-node path.
	want1 := topologytest.DGXH100(1).Topology.Intra
	l := m.IntraLink()
	if l.Class != want1.Class || l.BytesPerS != want1.BytesPerS || l.LatencyS != want1.LatencyS || l.Switch != want1.Switch {
		t.Errorf("IntraLink = %+v, want %+v", l, want1)
	}
	if l.Name != "NVLink 4 via NVSwitch, 18 links" {
		t.Errorf("IntraLink name %q", l.Name)
	}
}

func TestDiscoverDGXWithoutRemoteType(t *testing.T) {
	// Older drivers cannot say what is at the far end; the four switch bus
	// ids that all eight GPUs reach still give the NVSwitch away.
	spec := nvmltest.DGXH100Spec()
	spec.NoRemoteType = true
	m := discover(t, nvmltest.NewNVML(spec))
	if got := m.Matrix()[3][6]; got != "NV18" {
		t.Errorf("matrix[3][6] = %q, want NV18", got)
	}
	if l := m.IntraLink(); !l.Switch || l.BytesPerS != 450e9 {
		t.Errorf("IntraLink = %+v, want NVSwitch at 450e9", l)
	}
	for _, link := range m.GPUs[0].NVLinks {
		if link.RemoteType != topology.RemoteUnknown || !link.Switch {
			t.Fatalf("link %+v: want remote type unknown, switch inferred", link)
		}
	}
}

func TestDiscoverDownLinks(t *testing.T) {
	// Two of GPU 3's links down: its pairs count the 16 links left.
	spec := nvmltest.DGXH100Spec()
	spec.GPUs[3].NVLinks[0].Down = true
	spec.GPUs[3].NVLinks[17].Down = true
	m := discover(t, nvmltest.NewNVML(spec))
	if got, want := m.Matrix()[3][0], "NV16"; got != want {
		t.Errorf("matrix[3][0] = %q, want %q", got, want)
	}
	if got, want := m.Matrix()[1][0], "NV18"; got != want {
		t.Errorf("matrix[1][0] = %q, want %q", got, want)
	}
	// Slowest pair: 16 × 25 GB/s = 400 GB/s.
	if l := m.IntraLink(); l.BytesPerS != 400e9 {
		t.Errorf("IntraLink %g, want 400e9", l.BytesPerS)
	}
	if notes := strings.Join(m.Notes(), "\n"); !strings.Contains(notes, "GPU 3: 2 of 18 NVLinks are down") {
		t.Errorf("notes:\n%s", notes)
	}
}

func TestDiscoverH200Node(t *testing.T) {
	m := discover(t, nvmltest.H200NodeNVML())
	if m.HardwarePreset != "h200-sxm" {
		t.Errorf("HardwarePreset = %q, want h200-sxm", m.HardwarePreset)
	}
	g := m.GPUs[0]
	if g.SMs != 132 || g.SMsFrom != "nvml attributes" {
		t.Errorf("SMs %d from %q, want 132 from nvml attributes", g.SMs, g.SMsFrom)
	}
	if g.MemoryBytes != 143771<<20 {
		t.Errorf("memory %d", g.MemoryBytes)
	}
	for i, row := range m.Matrix() {
		for j, v := range row {
			if want := map[bool]string{true: "X", false: "NV18"}[i == j]; v != want {
				t.Errorf("matrix[%d][%d] = %q, want %q", i, j, v, want)
			}
		}
	}
	want := topologytest.H200Node().Topology.Intra
	if l := m.IntraLink(); l.BytesPerS != want.BytesPerS || !l.Switch || l.Class != topology.NVLink {
		t.Errorf("IntraLink = %+v, want %+v", l, want)
	}
}

func TestDiscoverPCIeBox(t *testing.T) {
	m := discover(t, nvmltest.PCIeBox8NVML())
	// Two PCIe switches, one per socket: PIX under a switch, SYS across.
	want := [][]string{
		{"X", "PIX", "PIX", "PIX", "SYS", "SYS", "SYS", "SYS"},
		{"PIX", "X", "PIX", "PIX", "SYS", "SYS", "SYS", "SYS"},
		{"PIX", "PIX", "X", "PIX", "SYS", "SYS", "SYS", "SYS"},
		{"PIX", "PIX", "PIX", "X", "SYS", "SYS", "SYS", "SYS"},
		{"SYS", "SYS", "SYS", "SYS", "X", "PIX", "PIX", "PIX"},
		{"SYS", "SYS", "SYS", "SYS", "PIX", "X", "PIX", "PIX"},
		{"SYS", "SYS", "SYS", "SYS", "PIX", "PIX", "X", "PIX"},
		{"SYS", "SYS", "SYS", "SYS", "PIX", "PIX", "PIX", "X"},
	}
	if got := m.Matrix(); !reflect.DeepEqual(got, want) {
		t.Errorf("Matrix =\n%v\nwant\n%v", got, want)
	}
	if sw := m.NVSwitches(); len(sw) != 0 {
		t.Errorf("NVSwitches = %v, want none", sw)
	}
	g := m.GPUs[2]
	if len(g.NVLinks) != 0 || g.NVLinkVersion != 0 {
		t.Errorf("GPU 2 NVLinks %v version %d, want none", g.NVLinks, g.NVLinkVersion)
	}
	// nvmlDeviceGetNumGpuCores is missing (the fake panics if called) and the
	// attributes are unsupported: 114 SMs from the name table.
	if g.SMs != 114 || g.SMsFrom != "name table" {
		t.Errorf("SMs %d from %q, want 114 from the name table", g.SMs, g.SMsFrom)
	}
	// Idle at Gen1, but the bandwidth uses the maximum, Gen5 x16.
	if g.PCIeGen != 1 || g.PCIeMaxGen != 5 {
		t.Errorf("GPU 2 PCIe gen %d max %d, want 1 and 5", g.PCIeGen, g.PCIeMaxGen)
	}
	if p := m.Pairs[1][6]; p.P2PRead != topology.P2PChipset || p.P2PNVLink != topology.P2PUnsupported {
		t.Errorf("pair 1-6 = %+v, want P2P read CNS, NVLink NS", p)
	}
	// Slowest pair: equal bandwidth everywhere, so the farthest, SYS.
	// Gen5 x16: 32 GT/s × 16 × 128/130 / 8 = 63.0 GB/s.
	want1 := topologytest.PCIeBox8().Topology.Intra
	l := m.IntraLink()
	if l.Class != topology.PCIe || l.BytesPerS != want1.BytesPerS || l.LatencyS != want1.LatencyS || l.Switch {
		t.Errorf("IntraLink = %+v, want %+v", l, want1)
	}
	if !strings.Contains(l.Name, "PCIe Gen5 x16, SYS") || !strings.Contains(l.Name, "CNS") {
		t.Errorf("IntraLink name %q", l.Name)
	}
	if m.HardwarePreset != "" {
		t.Errorf("HardwarePreset = %q, want none for H100 PCIe", m.HardwarePreset)
	}
	if _, _, err := m.Topology(func(string) (topology.GPU, error) { return topologytest.H100SXM(), nil }); !errors.Is(err, topology.ErrNoPreset) {
		t.Errorf("Topology without preset: %v, want ErrNoPreset", err)
	}
	// As partbench topo --hardware h100-sxm does.
	m.HardwarePreset = "h100-sxm"
	topo, gpu, err := m.Topology(func(string) (topology.GPU, error) { return topologytest.H100SXM(), nil })
	if err != nil {
		t.Fatal(err)
	}
	if topo.GPUsPerNode != 8 || topo.Nodes != 1 || gpu.SMs != 114 || gpu.Name != "NVIDIA H100 PCIe" {
		t.Errorf("topology %+v gpu %+v", topo, gpu)
	}
}

func TestDiscoverMIG(t *testing.T) {
	spec := nvmltest.DGXH100Spec()
	spec.GPUs[6].MIG = true
	m := discover(t, nvmltest.NewNVML(spec))
	if m.GPUs[6].MIG != topology.MIGEnabled || m.GPUs[0].MIG != topology.MIGDisabled {
		t.Errorf("MIG: GPU 6 %q, GPU 0 %q", m.GPUs[6].MIG, m.GPUs[0].MIG)
	}
	if _, _, err := m.Topology(func(string) (topology.GPU, error) { return topologytest.H100SXM(), nil }); err == nil || !strings.Contains(err.Error(), "GPU 6 runs in MIG mode") {
		t.Errorf("Topology with MIG: %v", err)
	}
}

func TestDiscoverNoNVML(t *testing.T) {
	for name, lib := range map[string]nvml.Interface{"no library": nvmltest.NoNVML(), "no devices": nvmltest.NoGPUs()} {
		m, err := nvmldiscover.Discover(lib)
		if m != nil || !errors.Is(err, topology.ErrNoGPU) {
			t.Errorf("%s: %v, %v; want ErrNoGPU", name, m, err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "--preset") || strings.HasSuffix(msg, ".") {
			t.Errorf("%s: message %q: want one line pointing at --preset, no trailing period", name, msg)
		}
	}
	m, err := nvmldiscover.Discover(nvmltest.NoNVML())
	if err == nil || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("cause missing: %v %v", m, err)
	}
}

func TestDiscoverShutsDown(t *testing.T) {
	lib := nvmltest.DGXH100NVML()
	discover(t, lib)
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
}

// On a machine with NVML, DiscoverLocal must give a consistent machine; on
// any other it must fail with ErrNoGPU.
func TestRealGPUDiscover(t *testing.T) {
	m, err := nvmldiscover.DiscoverLocal()
	if errors.Is(err, topology.ErrNoGPU) {
		t.Skipf("no NVML here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: driver %s, CUDA %s, %d × %s, preset %q", m.Hostname, m.DriverVersion, topology.CUDAVersionString(m.CUDADriverVersion), len(m.GPUs), m.GPUs[0].Name, m.HardwarePreset)
	mat := m.Matrix()
	for i, row := range mat {
		t.Logf("GPU%d %v", i, row)
		if row[i] != "X" || len(row) != len(m.GPUs) {
			t.Errorf("row %d: %v", i, row)
		}
		for j, v := range row {
			if v != mat[j][i] {
				t.Errorf("matrix not symmetric at %d,%d: %q vs %q", i, j, v, mat[j][i])
			}
		}
	}
	for _, d := range m.GPUs {
		if d.Name == "" || d.MemoryBytes <= 0 || d.UUID == "" || d.BusID == "" {
			t.Errorf("GPU %d incomplete: %+v", d.Index, d)
		}
	}
	for _, n := range m.Notes() {
		t.Log("note:", n)
	}
}

// A DGX A100: 12 NVLink 3 links per GPU, two into each of six
// second-generation NVSwitches, which do not reduce in the switch.
func TestDiscoverDGXA100(t *testing.T) {
	spec := nvmltest.DGXH100Spec()
	spec.NVLinkVersion = 5 // what A100s report (hwloc issue #658)
	for i := range spec.GPUs {
		g := &spec.GPUs[i]
		g.Name, g.CCMajor, g.CCMinor, g.Cores, g.MemoryBytes = "NVIDIA A100-SXM4-80GB", 8, 0, 108*64, 81920<<20
		g.NVLinks = nil
		for s := 0; s < 6; s++ {
			for k := 0; k < 2; k++ {
				g.NVLinks = append(g.NVLinks, nvmltest.FakeNVLink{Remote: "00000000:C" + string(rune('0'+s)) + ":00.0", Switch: true})
			}
		}
	}
	m := discover(t, nvmltest.NewNVML(spec))
	if got := m.Matrix()[2][7]; got != "NV12" {
		t.Errorf("matrix[2][7] = %q, want NV12", got)
	}
	if m.HardwarePreset != "a100-sxm-80g" || m.GPUs[0].SMs != 108 || m.GPUs[0].NVLinkVersion != 3 {
		t.Errorf("preset %q, SMs %d, NVLink %d; want a100-sxm-80g, 108, 3", m.HardwarePreset, m.GPUs[0].SMs, m.GPUs[0].NVLinkVersion)
	}
	// 12 × 25 GB/s = 300 GB/s; an NVLink path, but no NVLS.
	l := m.IntraLink()
	if l.Class != topology.NVLink || l.BytesPerS != 300e9 || l.Switch || !strings.Contains(l.Name, "NVLink 3 via NVSwitch, 12 links (no in-switch reduction)") {
		t.Errorf("IntraLink = %+v", l)
	}
	if sw := m.NVSwitches(); len(sw) != 6 {
		t.Errorf("NVSwitches = %v, want 6", sw)
	}
}

// An old driver lacks the younger NVML functions: discovery asks before it
// calls (the fake panics on a call to a missing one) and does without.
func TestDiscoverOldDriver(t *testing.T) {
	spec := nvmltest.DGXH100Spec()
	spec.Missing = []string{"nvmlDeviceGetNumaNodeId", "nvmlDeviceGetNumGpuCores", "nvmlDeviceGetNvLinkRemoteDeviceType", "nvmlDeviceGetMemoryAffinity"}
	m := discover(t, nvmltest.NewNVML(spec))
	g := m.GPUs[4]
	if g.NUMANode != -1 || g.GPUNUMANode != -1 || g.CPUAffinity != "56-111,168-223" {
		t.Errorf("NUMA %d, GPU NUMA %d, CPUs %q; want -1, -1 and the CPU list", g.NUMANode, g.GPUNUMANode, g.CPUAffinity)
	}
	if g.SMs != 132 || g.SMsFrom != "name table" {
		t.Errorf("SMs %d from %q, want 132 from the name table", g.SMs, g.SMsFrom)
	}
	// Remote type unknown: the shared switch bus ids still tell.
	if got := m.Matrix()[0][7]; got != "NV18" {
		t.Errorf("matrix[0][7] = %q, want NV18", got)
	}
}
