//go:build cgo

package nvmltest

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// FakeMachine describes a machine for NewNVML. Figures not said to come from
// a source are illustrative, close to what nvidia-smi shows on such machines.
type FakeMachine struct {
	DriverVersion     string
	NVMLVersion       string
	CUDADriverVersion int
	// NVLinkVersion is the raw value nvmlDeviceGetNvLinkVersion returns for
	// every link (H100 reports 7; see topology.NVLinkGeneration).
	NVLinkVersion uint32
	GPUs          []FakeGPU
	// Level is the closest common PCIe ancestor of GPUs i and j.
	Level func(i, j int) nvml.GpuTopologyLevel
	// P2PRead is NVML's peer-to-peer read status of a pair; nil means OK.
	// NVLink P2P is OK between GPUs that both have NVLinks, else not supported.
	P2PRead func(i, j int) nvml.GpuP2PStatus
	// Missing lists NVML symbols the fake library lacks; calling one panics,
	// as calling a missing symbol of the real library ends the process.
	Missing []string
	// NoRemoteType makes nvmlDeviceGetNvLinkRemoteDeviceType answer
	// NOT_SUPPORTED, as older drivers do.
	NoRemoteType bool
}

// FakeGPU is one GPU of a FakeMachine.
type FakeGPU struct {
	Name        string
	BusID       string
	MemoryBytes uint64
	CCMajor     int
	CCMinor     int
	// SMs is what nvmlDeviceGetAttributes reports (0: NOT_SUPPORTED, as for
	// a whole GPU on many drivers); Cores what nvmlDeviceGetNumGpuCores
	// reports (0: NOT_SUPPORTED).
	SMs            int
	Cores          int
	MaxSMClockMHz  uint32
	MaxMemClockMHz uint32
	PCIeMaxGen     int
	PCIeMaxWidth   int
	PCIeGen        int
	PCIeWidth      int
	// NUMANode is the node memory affinity reports (-1: NOT_SUPPORTED); CPUs
	// the CPU affinity as a list ("0-55,112-167").
	NUMANode int
	CPUs     string
	MIG      bool
	NVLinks  []FakeNVLink
}

// FakeNVLink is one NVLink of a FakeGPU.
type FakeNVLink struct {
	// Remote is the PCI bus id at the far end: a GPU's, or an NVSwitch's when
	// Switch is set.
	Remote string
	Switch bool
	Down   bool
}

// H100 SXM5 as NVML reports it: name, memory (81,559 MiB, as in
// configs/hardware/h100-sxm.toml), compute capability 9.0, 132 SMs × 128
// FP32 cores, maximum clocks.
const (
	h100Name      = "NVIDIA H100 80GB HBM3"
	h100Bytes     = 81559 << 20
	h100Cores     = 132 * 128
	h100SMClock   = 1980
	h100MemClock  = 2619
	h100NVLinkRaw = 7 // what H100s return (topology.NVLinkGeneration)
)

// dgxBusIDs are the GPUs' PCI bus ids on the fake DGX board, and
// dgxSwitchBusIDs its four NVSwitch chips'.
var (
	dgxBusIDs       = []string{"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0", "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"}
	dgxSwitchBusIDs = []string{"00000000:05:00.0", "00000000:06:00.0", "00000000:07:00.0", "00000000:08:00.0"}
)

// hgxBoard is 8 GPUs of one model on NVSwitch: 18 links per GPU split
// 5+4+4+5 over 4 NVSwitch chips, PCIe Gen5 x16, GPUs 0–3 on NUMA node 0 and
// 4–7 on node 1 (two 56-core sockets with SMT).
func hgxBoard(g FakeGPU) []FakeGPU {
	split := []int{5, 4, 4, 5}
	out := make([]FakeGPU, 8)
	for i := range out {
		d := g
		d.BusID = dgxBusIDs[i]
		d.NUMANode = i / 4
		d.CPUs = []string{"0-55,112-167", "56-111,168-223"}[i/4]
		d.NVLinks = nil
		for s, n := range split {
			for k := 0; k < n; k++ {
				d.NVLinks = append(d.NVLinks, FakeNVLink{Remote: dgxSwitchBusIDs[s], Switch: true})
			}
		}
		out[i] = d
	}
	return out
}

// byNUMA is NODE within a NUMA node and SYS across (GPUs 0–3 and 4–7).
func byNUMA(i, j int) nvml.GpuTopologyLevel {
	if i/4 == j/4 {
		return nvml.TOPOLOGY_NODE
	}
	return nvml.TOPOLOGY_SYSTEM
}

// DGXH100Spec is one DGX H100 node: 8 H100 SXM5 on 4 NVSwitch chips, 18
// NVLink 4 links each; NVML reports no SM count in the attributes, so
// discovery derives it from the core count.
func DGXH100Spec() FakeMachine {
	return FakeMachine{
		DriverVersion:     "550.54.15",
		NVMLVersion:       "12.550.54.15",
		CUDADriverVersion: 12040,
		NVLinkVersion:     h100NVLinkRaw,
		GPUs: hgxBoard(FakeGPU{
			Name: h100Name, MemoryBytes: h100Bytes, CCMajor: 9, CCMinor: 0, Cores: h100Cores,
			MaxSMClockMHz: h100SMClock, MaxMemClockMHz: h100MemClock,
			PCIeMaxGen: 5, PCIeMaxWidth: 16, PCIeGen: 5, PCIeWidth: 16,
		}),
		Level: byNUMA,
	}
}

// H200NodeSpec is one node of 8 H200 SXM on NVSwitch (as in a DGX H200);
// NVML reports the SM count in the attributes.
func H200NodeSpec() FakeMachine {
	return FakeMachine{
		DriverVersion:     "550.90.07",
		NVMLVersion:       "12.550.90.07",
		CUDADriverVersion: 12040,
		NVLinkVersion:     h100NVLinkRaw,
		GPUs: hgxBoard(FakeGPU{
			Name: "NVIDIA H200", MemoryBytes: 143771 << 20, CCMajor: 9, CCMinor: 0, SMs: 132, Cores: h100Cores,
			MaxSMClockMHz: 1980, MaxMemClockMHz: 3201,
			PCIeMaxGen: 5, PCIeMaxWidth: 16, PCIeGen: 5, PCIeWidth: 16,
		}),
		Level: byNUMA,
	}
}

// PCIeBox8Spec is 8 H100 PCIe (no NVLink), GPUs 0–3 under one PCIe switch on
// NUMA node 0 and 4–7 under another on node 1; peer-to-peer across the
// sockets is not supported by the chipset. GPU 2 is idle, its link down at
// Gen1. The library lacks nvmlDeviceGetNumGpuCores, so the SM count comes
// from the name table.
func PCIeBox8Spec() FakeMachine {
	f := FakeMachine{
		DriverVersion:     "550.54.15",
		NVMLVersion:       "12.550.54.15",
		CUDADriverVersion: 12040,
		Level: func(i, j int) nvml.GpuTopologyLevel {
			if i/4 == j/4 {
				return nvml.TOPOLOGY_SINGLE
			}
			return nvml.TOPOLOGY_SYSTEM
		},
		P2PRead: func(i, j int) nvml.GpuP2PStatus {
			if i/4 == j/4 {
				return nvml.P2P_STATUS_OK
			}
			return nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED
		},
		Missing: []string{"nvmlDeviceGetNumGpuCores"},
	}
	for i := 0; i < 8; i++ {
		g := FakeGPU{
			Name: "NVIDIA H100 PCIe", BusID: fmt.Sprintf("00000000:%02X:00.0", []int{0x18, 0x19, 0x1A, 0x1B, 0x98, 0x99, 0x9A, 0x9B}[i]),
			MemoryBytes: h100Bytes, CCMajor: 9, CCMinor: 0,
			MaxSMClockMHz: 1755, MaxMemClockMHz: 1593,
			PCIeMaxGen: 5, PCIeMaxWidth: 16, PCIeGen: 5, PCIeWidth: 16,
			NUMANode: i / 4, CPUs: []string{"0-31,64-95", "32-63,96-127"}[i/4],
		}
		if i == 2 {
			g.PCIeGen = 1
		}
		f.GPUs = append(f.GPUs, g)
	}
	return f
}

// DGXH100NVML is an NVML fake of one DGX H100 node (DGXH100Spec).
func DGXH100NVML() *mock.Interface { return NewNVML(DGXH100Spec()) }

// H200NodeNVML is an NVML fake of one H200 node (H200NodeSpec).
func H200NodeNVML() *mock.Interface { return NewNVML(H200NodeSpec()) }

// PCIeBox8NVML is an NVML fake of the PCIe box (PCIeBox8Spec).
func PCIeBox8NVML() *mock.Interface { return NewNVML(PCIeBox8Spec()) }

// NoNVML is NVML where the library cannot be loaded: Init fails.
func NoNVML() *mock.Interface {
	return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
}

// NoGPUs is NVML on a machine with the driver but no GPUs.
func NoGPUs() *mock.Interface { return NewNVML(FakeMachine{DriverVersion: "550.54.15"}) }

// NewNVML builds an NVML fake of f on go-nvml's generated mocks; a test may
// replace any of its functions (InitFunc, a device's GetNvLinkStateFunc, …)
// afterwards. Device handles are *mock.Device.
func NewNVML(f FakeMachine) *mock.Interface {
	missing := map[string]bool{}
	for _, s := range f.Missing {
		missing[s] = true
	}
	need := func(sym string) {
		if missing[sym] {
			panic("fake NVML: " + sym + " called although the library lacks it")
		}
	}
	devs := make([]*mock.Device, len(f.GPUs))
	index := map[nvml.Device]int{}
	for i := range f.GPUs {
		devs[i] = &mock.Device{}
		index[devs[i]] = i
	}
	for i := range f.GPUs {
		fakeDevice(devs[i], i, f, index, need)
	}
	lib := &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return f.DriverVersion, nvml.SUCCESS },
		SystemGetNVMLVersionFunc:       func() (string, nvml.Return) { return f.NVMLVersion, nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return f.CUDADriverVersion, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
	ext := &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
		if missing[s] {
			return fmt.Errorf("fake NVML: no symbol %s", s)
		}
		return nil
	}}
	lib.ExtensionsFunc = func() nvml.ExtendedInterface { return ext }
	return lib
}

func fakeDevice(d *mock.Device, i int, f FakeMachine, index map[nvml.Device]int, need func(string)) {
	g := f.GPUs[i]
	ok := nvml.SUCCESS
	d.GetIndexFunc = func() (int, nvml.Return) { return i, ok }
	d.GetNameFunc = func() (string, nvml.Return) { return g.Name, ok }
	d.GetUUIDFunc = func() (string, nvml.Return) { return fakeUUID(g.Name, i), ok }
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(g.BusID), ok }
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: g.MemoryBytes, Free: g.MemoryBytes}, ok }
	d.GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) { return g.CCMajor, g.CCMinor, ok }
	d.GetAttributesFunc = func() (nvml.DeviceAttributes, nvml.Return) {
		if g.SMs == 0 {
			return nvml.DeviceAttributes{}, nvml.ERROR_NOT_SUPPORTED
		}
		return nvml.DeviceAttributes{MultiprocessorCount: uint32(g.SMs), MemorySizeMB: g.MemoryBytes >> 20}, ok
	}
	d.GetNumGpuCoresFunc = func() (int, nvml.Return) {
		need("nvmlDeviceGetNumGpuCores")
		if g.Cores == 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return g.Cores, ok
	}
	d.GetMaxClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		switch t {
		case nvml.CLOCK_SM:
			return g.MaxSMClockMHz, ok
		case nvml.CLOCK_MEM:
			return g.MaxMemClockMHz, ok
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return g.PCIeMaxGen, ok }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return g.PCIeMaxWidth, ok }
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return g.PCIeGen, ok }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return g.PCIeWidth, ok }
	d.GetMemoryAffinityFunc = func(nodes int, scope nvml.AffinityScope) ([]uint, nvml.Return) {
		need("nvmlDeviceGetMemoryAffinity")
		if g.NUMANode < 0 || scope != nvml.AFFINITY_SCOPE_NODE {
			return nil, nvml.ERROR_NOT_SUPPORTED
		}
		return mask([]int{g.NUMANode}, nodes), ok
	}
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) {
		need("nvmlDeviceGetNumaNodeId")
		return 0, nvml.ERROR_NOT_SUPPORTED // GPU memory is no NUMA node on these machines
	}
	d.GetCpuAffinityFunc = func(n int) ([]uint, nvml.Return) { return mask(parseCPUs(g.CPUs), n), ok }
	d.GetMigModeFunc = func() (int, int, nvml.Return) {
		if g.MIG {
			return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, ok
		}
		return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, ok
	}
	link := func(l int) (FakeNVLink, nvml.Return) {
		switch {
		case len(g.NVLinks) == 0:
			return FakeNVLink{}, nvml.ERROR_NOT_SUPPORTED
		case l < 0 || l >= len(g.NVLinks):
			return FakeNVLink{}, nvml.ERROR_INVALID_ARGUMENT
		}
		return g.NVLinks[l], ok
	}
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		nl, r := link(l)
		if nl.Down {
			return nvml.FEATURE_DISABLED, r
		}
		return nvml.FEATURE_ENABLED, r
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
		nl, r := link(l)
		return pciInfo(nl.Remote), r
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		need("nvmlDeviceGetNvLinkRemoteDeviceType")
		nl, r := link(l)
		switch {
		case r != ok:
			return 0, r
		case f.NoRemoteType:
			return nvml.NVLINK_DEVICE_TYPE_UNKNOWN, nvml.ERROR_NOT_SUPPORTED
		case nl.Switch:
			return nvml.NVLINK_DEVICE_TYPE_SWITCH, ok
		}
		return nvml.NVLINK_DEVICE_TYPE_GPU, ok
	}
	d.GetNvLinkVersionFunc = func(l int) (uint32, nvml.Return) {
		_, r := link(l)
		return f.NVLinkVersion, r
	}
	peer := func(other nvml.Device) (int, bool) {
		j, found := index[other]
		return j, found && j != i
	}
	d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		j, found := peer(other)
		if !found || f.Level == nil {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return f.Level(i, j), ok
	}
	d.GetP2PStatusFunc = func(other nvml.Device, idx nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
		j, found := peer(other)
		if !found {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		switch idx {
		case nvml.P2P_CAPS_INDEX_READ:
			if f.P2PRead == nil {
				return nvml.P2P_STATUS_OK, ok
			}
			return f.P2PRead(i, j), ok
		case nvml.P2P_CAPS_INDEX_NVLINK:
			if len(g.NVLinks) > 0 && len(f.GPUs[j].NVLinks) > 0 {
				return nvml.P2P_STATUS_OK, ok
			}
			return nvml.P2P_STATUS_NOT_SUPPORTED, ok
		}
		return nvml.P2P_STATUS_UNKNOWN, ok
	}
}

func fakeUUID(name string, i int) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", h.Sum32(), i)
}

// pciInfo is a PciInfo carrying bus id s, as NVML fills it.
func pciInfo(s string) nvml.PciInfo {
	var p nvml.PciInfo
	for k := 0; k < len(s) && k < len(p.BusId)-1; k++ {
		p.BusId[k] = int8(s[k])
	}
	legacy := s
	if len(legacy) > 4 && strings.HasPrefix(legacy, "0000") {
		legacy = legacy[4:] // the legacy field has a 4-digit domain
	}
	for k := 0; k < len(legacy) && k < len(p.BusIdLegacy)-1; k++ {
		p.BusIdLegacy[k] = int8(legacy[k])
	}
	var dom, bus, dev, fn uint32
	if _, err := fmt.Sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn); err == nil {
		p.Domain, p.Bus, p.Device = dom, bus, dev
	}
	return p
}

// mask is a bit set of n bits with the given bits set, in NVML's words.
func mask(bits []int, n int) []uint {
	out := make([]uint, (n+63)/64)
	for _, b := range bits {
		if b >= 0 && b/64 < len(out) {
			out[b/64] |= 1 << (b % 64)
		}
	}
	return out
}

// parseCPUs reads a CPU list such as "0-3,8".
func parseCPUs(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			panic("fake NVML: bad CPU list " + strconv.Quote(s))
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				panic("fake NVML: bad CPU list " + strconv.Quote(s))
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out
}
