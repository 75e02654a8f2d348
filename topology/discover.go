//go:build cgo

package topology

import (
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// DiscoverLocal reads this machine through the NVML library the driver
// installs (libnvidia-ml.so.1, opened at run time). Without it, or without
// devices, the error matches ErrNoGPU.
func DiscoverLocal() (*Machine, error) { return Discover(nvml.New()) }

// NVML functions younger than the oldest drivers partbench meets. Calling a
// function the loaded library lacks ends the process, so Discover asks the
// library for these first and treats a missing one as "not reported".
const (
	symNUMANodeID     = "nvmlDeviceGetNumaNodeId"
	symNumGPUCores    = "nvmlDeviceGetNumGpuCores"
	symNVLinkRemote   = "nvmlDeviceGetNvLinkRemoteDeviceType"
	symMemoryAffinity = "nvmlDeviceGetMemoryAffinity"
)

// affinityCPUs and affinityNodes bound the CPU and NUMA node numbers read
// from NVML's affinity masks.
const (
	affinityCPUs  = 4096
	affinityNodes = 64
)

// Discover reads the GPUs lib reports: versions, each GPU's facts and
// NVLinks, and for each pair the PCIe common ancestor and NVML's
// peer-to-peer status; then it works out which links go to an NVSwitch and
// which hardware preset matches the GPUs by name. A fact NVML does not
// report is left unset; only a failure to list the GPUs is an error. When
// NVML cannot be initialised or reports no devices the error matches ErrNoGPU.
func Discover(lib nvml.Interface) (*Machine, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, &noGPUError{cause: "nvml: " + ret.Error()}
	}
	defer lib.Shutdown()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, &noGPUError{cause: "nvml device count: " + ret.Error()}
	}
	if n == 0 {
		return nil, &noGPUError{cause: "NVML reports no devices"}
	}
	present := map[string]bool{}
	if ext := lib.Extensions(); ext != nil {
		for _, sym := range []string{symNUMANodeID, symNumGPUCores, symNVLinkRemote, symMemoryAffinity} {
			present[sym] = ext.LookupSymbol(sym) == nil
		}
	}
	has := func(sym string) bool { return present[sym] }
	m := &Machine{}
	m.Hostname, _ = os.Hostname()
	if v, r := lib.SystemGetDriverVersion(); r == nvml.SUCCESS {
		m.DriverVersion = v
	}
	if v, r := lib.SystemGetCudaDriverVersion(); r == nvml.SUCCESS {
		m.CUDADriverVersion = v
	}
	if v, r := lib.SystemGetNVMLVersion(); r == nvml.SUCCESS {
		m.NVMLVersion = v
	}
	devs := make([]nvml.Device, n)
	for i := range devs {
		d, r := lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d: %v", i, r)
		}
		devs[i] = d
		m.GPUs = append(m.GPUs, readDevice(i, d, has))
	}
	m.Pairs = make([][]Pair, n)
	for i := range m.Pairs {
		m.Pairs[i] = make([]Pair, n)
		for j := range m.Pairs[i] {
			if i == j {
				continue
			}
			p := &m.Pairs[i][j]
			if lv, r := devs[i].GetTopologyCommonAncestor(devs[j]); r == nvml.SUCCESS {
				p.PCIe = pcieLevel(lv)
			}
			p.P2PRead = p2pStatus(devs[i].GetP2PStatus(devs[j], nvml.P2P_CAPS_INDEX_READ))
			p.P2PNVLink = p2pStatus(devs[i].GetP2PStatus(devs[j], nvml.P2P_CAPS_INDEX_NVLINK))
		}
	}
	m.resolve()
	m.HardwarePreset = matchPreset(m.GPUs)
	return m, nil
}

// matchPreset is the hardware preset of the GPUs' model, "" when they differ
// or partbench has none.
func matchPreset(gpus []Device) string {
	for _, d := range gpus[1:] {
		if d.Name != gpus[0].Name {
			return ""
		}
	}
	model, _ := LookupGPUModel(gpus[0].Name)
	return model.Preset
}

func readDevice(i int, d nvml.Device, has func(string) bool) Device {
	g := Device{Index: i, NUMANode: -1, GPUNUMANode: -1, MIG: MIGUnsupported}
	if v, r := d.GetIndex(); r == nvml.SUCCESS {
		g.Index = v
	}
	if v, r := d.GetName(); r == nvml.SUCCESS {
		g.Name = v
	}
	if v, r := d.GetUUID(); r == nvml.SUCCESS {
		g.UUID = v
	}
	if v, r := d.GetPciInfo(); r == nvml.SUCCESS {
		g.BusID = busID(v)
	}
	if v, r := d.GetMemoryInfo(); r == nvml.SUCCESS {
		g.MemoryBytes = int64(v.Total)
	}
	if ma, mi, r := d.GetCudaComputeCapability(); r == nvml.SUCCESS {
		g.CCMajor, g.CCMinor = ma, mi
	}
	model, known := LookupGPUModel(g.Name)
	// SM count: NVML's attributes (MIG instances and some GPUs), else its
	// core count over the FP32 lanes per SM, else the name table.
	if a, r := d.GetAttributes(); r == nvml.SUCCESS && a.MultiprocessorCount > 0 {
		g.SMs, g.SMsFrom = int(a.MultiprocessorCount), "nvml attributes"
	} else if per := fp32CoresPerSM(g.CCMajor, g.CCMinor); has(symNumGPUCores) && per > 0 {
		if c, r := d.GetNumGpuCores(); r == nvml.SUCCESS && c > 0 && c%per == 0 {
			g.SMs, g.SMsFrom = c/per, "nvml cores"
		}
	}
	if g.SMs == 0 && known {
		g.SMs, g.SMsFrom = model.SMs, "name table"
	}
	if known {
		g.L2Bytes, g.L2From = model.L2Bytes, "name table"
	}
	if v, r := d.GetMaxClockInfo(nvml.CLOCK_SM); r == nvml.SUCCESS {
		g.MaxSMClockMHz = int(v)
	}
	if v, r := d.GetMaxClockInfo(nvml.CLOCK_MEM); r == nvml.SUCCESS {
		g.MaxMemClockMHz = int(v)
	}
	if v, r := d.GetMaxPcieLinkGeneration(); r == nvml.SUCCESS {
		g.PCIeMaxGen = v
	}
	if v, r := d.GetMaxPcieLinkWidth(); r == nvml.SUCCESS {
		g.PCIeMaxWidth = v
	}
	if v, r := d.GetCurrPcieLinkGeneration(); r == nvml.SUCCESS {
		g.PCIeGen = v
	}
	if v, r := d.GetCurrPcieLinkWidth(); r == nvml.SUCCESS {
		g.PCIeWidth = v
	}
	if has(symMemoryAffinity) {
		if v, r := d.GetMemoryAffinity(affinityNodes, nvml.AFFINITY_SCOPE_NODE); r == nvml.SUCCESS {
			if nodes := bitsSet(words(v)); len(nodes) > 0 {
				g.NUMANode = nodes[0]
			}
		}
	}
	if has(symNUMANodeID) {
		if v, r := d.GetNumaNodeId(); r == nvml.SUCCESS {
			g.GPUNUMANode = v
		}
	}
	if v, r := d.GetCpuAffinity(affinityCPUs); r == nvml.SUCCESS {
		g.CPUAffinity = cpuList(bitsSet(words(v)))
	}
	if cur, pend, r := d.GetMigMode(); r == nvml.SUCCESS {
		g.MIG = migMode(cur)
		if p := migMode(pend); p != g.MIG {
			g.MIGPending = p
		}
	}
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		st, r := d.GetNvLinkState(l)
		if r != nvml.SUCCESS {
			continue // no such link, or no NVLink at all
		}
		link := DeviceLink{Link: l, Active: st == nvml.FEATURE_ENABLED, RemoteType: RemoteUnknown, Peer: -1}
		if link.Active {
			if p, r := d.GetNvLinkRemotePciInfo(l); r == nvml.SUCCESS {
				link.RemoteBusID = busID(p)
			}
			if has(symNVLinkRemote) {
				if t, r := d.GetNvLinkRemoteDeviceType(l); r == nvml.SUCCESS {
					link.RemoteType = remoteType(t)
				}
			}
			if g.NVLinkVersionNVML == 0 {
				if v, r := d.GetNvLinkVersion(l); r == nvml.SUCCESS {
					g.NVLinkVersionNVML = v
				}
			}
		}
		g.NVLinks = append(g.NVLinks, link)
	}
	if active, _ := g.ActiveNVLinks(); active > 0 {
		g.NVLinkVersion = NVLinkGeneration(g.CCMajor, g.CCMinor, g.NVLinkVersionNVML)
	}
	return g
}

// pcieLevel spells NVML's common ancestor as nvidia-smi topo -m does; two
// GPUs on one board (INTERNAL) count as PIX.
func pcieLevel(l nvml.GpuTopologyLevel) PCIeLevel {
	switch l {
	case nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE:
		return PIX
	case nvml.TOPOLOGY_MULTIPLE:
		return PXB
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return PHB
	case nvml.TOPOLOGY_NODE:
		return NODE
	case nvml.TOPOLOGY_SYSTEM:
		return SYS
	}
	return ""
}

func p2pStatus(s nvml.GpuP2PStatus, r nvml.Return) P2PStatus {
	if r != nvml.SUCCESS {
		return ""
	}
	switch s {
	case nvml.P2P_STATUS_OK:
		return P2POK
	case nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED:
		return P2PChipset
	case nvml.P2P_STATUS_GPU_NOT_SUPPORTED:
		return P2PGPU
	case nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
		return P2PTopology
	case nvml.P2P_STATUS_DISABLED_BY_REGKEY:
		return P2PDisabled
	case nvml.P2P_STATUS_NOT_SUPPORTED:
		return P2PUnsupported
	}
	return P2PUnknown
}

func remoteType(t nvml.IntNvLinkDeviceType) NVLinkRemote {
	switch t {
	case nvml.NVLINK_DEVICE_TYPE_GPU:
		return RemoteGPU
	case nvml.NVLINK_DEVICE_TYPE_SWITCH:
		return RemoteSwitch
	case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
		return RemoteIBMNPU
	}
	return RemoteUnknown
}

func migMode(v int) MIGMode {
	if v == nvml.DEVICE_MIG_ENABLE {
		return MIGEnabled
	}
	return MIGDisabled
}

// busID is the PCI bus id NVML wrote, normalized.
func busID(p nvml.PciInfo) string {
	s := cString(p.BusId[:])
	if s == "" {
		s = cString(p.BusIdLegacy[:])
	}
	if s == "" {
		return ""
	}
	return NormalizeBusID(s)
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func words(v []uint) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = uint64(x)
	}
	return out
}
