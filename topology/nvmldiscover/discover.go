//go:build cgo

package nvmldiscover

import (
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/partbench/partbench/topology"
)

// DiscoverLocal reads this machine through the NVML library the driver
// installs (libnvidia-ml.so.1, opened at run time). Without it, or without
// devices, the error matches ErrNoGPU.
func DiscoverLocal() (*topology.Machine, error) { return Discover(nvml.New()) }

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
func Discover(lib nvml.Interface) (*topology.Machine, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, topology.NoGPU("nvml: " + ret.Error())
	}
	defer lib.Shutdown()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, topology.NoGPU("nvml device count: " + ret.Error())
	}
	if n == 0 {
		return nil, topology.NoGPU("NVML reports no devices")
	}
	present := map[string]bool{}
	if ext := lib.Extensions(); ext != nil {
		for _, sym := range []string{symNUMANodeID, symNumGPUCores, symNVLinkRemote, symMemoryAffinity} {
			present[sym] = ext.LookupSymbol(sym) == nil
		}
	}
	has := func(sym string) bool { return present[sym] }
	m := &topology.Machine{}
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
	m.Pairs = make([][]topology.Pair, n)
	for i := range m.Pairs {
		m.Pairs[i] = make([]topology.Pair, n)
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
	m.Resolve()
	m.HardwarePreset = topology.MatchPreset(m.GPUs)
	return m, nil
}

func readDevice(i int, d nvml.Device, has func(string) bool) topology.Device {
	g := topology.Device{Index: i, NUMANode: -1, GPUNUMANode: -1, MIG: topology.MIGUnsupported}
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
	model, known := topology.LookupGPUModel(g.Name)
	// SM count: NVML's attributes (MIG instances and some GPUs), else its
	// core count over the FP32 lanes per SM, else the name table.
	if a, r := d.GetAttributes(); r == nvml.SUCCESS && a.MultiprocessorCount > 0 {
		g.SMs, g.SMsFrom = int(a.MultiprocessorCount), "nvml attributes"
	} else if per := topology.FP32CoresPerSM(g.CCMajor, g.CCMinor); has(symNumGPUCores) && per > 0 {
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
			if nodes := topology.BitsSet(words(v)); len(nodes) > 0 {
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
		g.CPUAffinity = topology.CPUList(topology.BitsSet(words(v)))
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
		link := topology.DeviceLink{Link: l, Active: st == nvml.FEATURE_ENABLED, RemoteType: topology.RemoteUnknown, Peer: -1}
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
		g.NVLinkVersion = topology.NVLinkGeneration(g.CCMajor, g.CCMinor, g.NVLinkVersionNVML)
	}
	return g
}

// pcieLevel spells NVML's common ancestor as nvidia-smi topo -m does; two
// GPUs on one board (INTERNAL) count as PIX.
func pcieLevel(l nvml.GpuTopologyLevel) topology.PCIeLevel {
	switch l {
	case nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE:
		return topology.PIX
	case nvml.TOPOLOGY_MULTIPLE:
		return topology.PXB
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return topology.PHB
	case nvml.TOPOLOGY_NODE:
		return topology.NODE
	case nvml.TOPOLOGY_SYSTEM:
		return topology.SYS
	}
	return ""
}

func p2pStatus(s nvml.GpuP2PStatus, r nvml.Return) topology.P2PStatus {
	if r != nvml.SUCCESS {
		return ""
	}
	switch s {
	case nvml.P2P_STATUS_OK:
		return topology.P2POK
	case nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED:
		return topology.P2PChipset
	case nvml.P2P_STATUS_GPU_NOT_SUPPORTED:
		return topology.P2PGPU
	case nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
		return topology.P2PTopology
	case nvml.P2P_STATUS_DISABLED_BY_REGKEY:
		return topology.P2PDisabled
	case nvml.P2P_STATUS_NOT_SUPPORTED:
		return topology.P2PUnsupported
	}
	return topology.P2PUnknown
}

func remoteType(t nvml.IntNvLinkDeviceType) topology.NVLinkRemote {
	switch t {
	case nvml.NVLINK_DEVICE_TYPE_GPU:
		return topology.RemoteGPU
	case nvml.NVLINK_DEVICE_TYPE_SWITCH:
		return topology.RemoteSwitch
	case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
		return topology.RemoteIBMNPU
	}
	return topology.RemoteUnknown
}

func migMode(v int) topology.MIGMode {
	if v == nvml.DEVICE_MIG_ENABLE {
		return topology.MIGEnabled
	}
	return topology.MIGDisabled
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
	return topology.NormalizeBusID(s)
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
