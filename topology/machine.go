package topology

import (
	"fmt"
	"sort"
	"strings"
)

// Machine is what NVML reports about the GPUs of one computer (Discover), in
// a form that needs no GPU to read: Matrix, NodeTopology, Graph and SaveTOML
// work on a Machine built anywhere.
type Machine struct {
	Hostname      string `json:"hostname"`
	DriverVersion string `json:"driver_version"`
	// CUDADriverVersion is the CUDA version the driver supports, as NVML
	// reports it: 1000·major + 10·minor (12040 is 12.4).
	CUDADriverVersion int      `json:"cuda_driver_version"`
	NVMLVersion       string   `json:"nvml_version"`
	GPUs              []Device `json:"gpus"`
	// Pairs[i][j] is what lies between GPU i and GPU j; Pairs[i][i] is unused.
	Pairs [][]Pair `json:"pairs"`
	// HardwarePreset is the hardware preset that describes these GPUs,
	// matched by name (LookupGPUModel); "" when none does. A caller may set
	// it (partbench topo --hardware) before NodeTopology, GPUSpec or SaveTOML.
	HardwarePreset string `json:"hardware_preset,omitempty"`
}

// Device is one GPU as NVML reports it. Integers that NVML did not report
// are 0, except NUMANode and GPUNUMANode, which are -1.
type Device struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	UUID        string `json:"uuid"`
	BusID       string `json:"pci_bus_id"`
	MemoryBytes int64  `json:"memory_bytes"`
	// SMs is the multiprocessor count; SMsFrom says where it came from:
	// "nvml attributes", "nvml cores" (cores / FP32 lanes per SM) or "name table".
	SMs     int    `json:"sms"`
	SMsFrom string `json:"sms_from,omitempty"`
	// L2Bytes comes from the name table (NVML does not report the L2 size);
	// L2From is "name table" or "" when unknown.
	L2Bytes        int64  `json:"l2_bytes"`
	L2From         string `json:"l2_from,omitempty"`
	MaxSMClockMHz  int    `json:"max_sm_clock_mhz"`
	MaxMemClockMHz int    `json:"max_mem_clock_mhz"`
	// PCIe link: the maximum the GPU and its slot allow, and the current one
	// (which an idle GPU lowers to save power).
	PCIeMaxGen   int `json:"pcie_max_gen"`
	PCIeMaxWidth int `json:"pcie_max_width"`
	PCIeGen      int `json:"pcie_gen"`
	PCIeWidth    int `json:"pcie_width"`
	// NUMANode is the NUMA node nearest the GPU (NVML memory affinity);
	// CPUAffinity the CPUs nearest it ("0-55,112-167"); GPUNUMANode the NUMA
	// node of the GPU's own memory where the platform exposes it as one.
	NUMANode    int    `json:"numa_node"`
	CPUAffinity string `json:"cpu_affinity,omitempty"`
	GPUNUMANode int    `json:"gpu_numa_node"`
	// MIG is the current multi-instance mode; MIGPending the mode after the
	// next reset, when it differs.
	MIG        MIGMode `json:"mig"`
	MIGPending MIGMode `json:"mig_pending,omitempty"`
	CCMajor    int     `json:"compute_capability_major"`
	CCMinor    int     `json:"compute_capability_minor"`
	// NVLinkVersion is the NVLink generation (NVLinkGeneration);
	// NVLinkVersionNVML the raw value NVML reported for the first active link.
	NVLinkVersion     int          `json:"nvlink_version,omitempty"`
	NVLinkVersionNVML uint32       `json:"nvlink_version_nvml,omitempty"`
	NVLinks           []DeviceLink `json:"nvlinks,omitempty"`
}

// ComputeCapability is "major.minor", or "" when unknown.
func (d Device) ComputeCapability() string {
	if d.CCMajor == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", d.CCMajor, d.CCMinor)
}

// ActiveNVLinks counts the device's active links; SwitchNVLinks those of
// them that go to an NVSwitch.
func (d Device) ActiveNVLinks() (active, toSwitch int) {
	for _, l := range d.NVLinks {
		if l.Active {
			active++
			if l.Switch {
				toSwitch++
			}
		}
	}
	return active, toSwitch
}

// MIGMode is a GPU's multi-instance mode.
type MIGMode string

const (
	MIGEnabled     MIGMode = "enabled"
	MIGDisabled    MIGMode = "disabled"
	MIGUnsupported MIGMode = "n/a"
)

// NVLinkRemote is what NVML says sits at the far end of an NVLink.
type NVLinkRemote string

const (
	RemoteGPU     NVLinkRemote = "gpu"
	RemoteSwitch  NVLinkRemote = "switch"
	RemoteIBMNPU  NVLinkRemote = "ibmnpu"
	RemoteUnknown NVLinkRemote = "unknown"
)

// DeviceLink is one NVLink of a GPU.
type DeviceLink struct {
	Link   int  `json:"link"`
	Active bool `json:"active"`
	// RemoteBusID is the PCI bus id of the far end ("" if NVML did not say);
	// RemoteType the device type NVML reports there (unknown if it did not).
	RemoteBusID string       `json:"remote_pci_bus_id,omitempty"`
	RemoteType  NVLinkRemote `json:"remote_type"`
	// Peer is the index of the GPU at the far end, -1 for none; Switch says
	// the link goes to an NVSwitch: NVML says so, or the far end is no GPU of
	// this machine and links of two or more GPUs reach it.
	Peer   int  `json:"peer"`
	Switch bool `json:"nvswitch"`
}

// PCIeLevel is the closest common PCIe ancestor of two GPUs, spelled as
// nvidia-smi topo -m spells it.
type PCIeLevel string

const (
	// PIX: the GPUs share a PCIe switch (at most one bridge between them), or one board.
	PIX PCIeLevel = "PIX"
	// PXB: several PCIe bridges between them, but no host bridge.
	PXB PCIeLevel = "PXB"
	// PHB: the path goes through a PCIe host bridge (the CPU's root complex).
	PHB PCIeLevel = "PHB"
	// NODE: through the interconnect between host bridges of one NUMA node.
	NODE PCIeLevel = "NODE"
	// SYS: through the interconnect between NUMA nodes (QPI/UPI, Infinity Fabric).
	SYS PCIeLevel = "SYS"
)

// PCIeLevels lists the levels from nearest to farthest.
var PCIeLevels = []PCIeLevel{PIX, PXB, PHB, NODE, SYS}

// Describe says in words what a level's path crosses.
func (l PCIeLevel) Describe() string {
	switch l {
	case PIX:
		return "at most one PCIe bridge (one PCIe switch)"
	case PXB:
		return "several PCIe bridges, no host bridge"
	case PHB:
		return "a PCIe host bridge (the CPU)"
	case NODE:
		return "PCIe and the link between host bridges within a NUMA node"
	case SYS:
		return "PCIe and the link between NUMA nodes (QPI/UPI)"
	}
	return "unknown"
}

func (l PCIeLevel) rank() int {
	for i, x := range PCIeLevels {
		if x == l {
			return i
		}
	}
	return len(PCIeLevels)
}

// P2PStatus is NVML's answer to "can these two GPUs access each other
// directly", spelled as nvidia-smi topo -p2p spells it; "" when not asked.
type P2PStatus string

const (
	P2POK          P2PStatus = "OK"
	P2PChipset     P2PStatus = "CNS" // chipset not supported
	P2PGPU         P2PStatus = "GNS" // GPU not supported
	P2PTopology    P2PStatus = "TNS" // topology not supported
	P2PDisabled    P2PStatus = "DIS" // disabled by a driver registry key
	P2PUnsupported P2PStatus = "NS"  // not supported
	P2PUnknown     P2PStatus = "U"
)

// Pair is what lies between two GPUs.
type Pair struct {
	// NVLinks is the number of NVLinks between them: direct links, or
	// through an NVSwitch the fewer of the two GPUs' switch links (the n of
	// NV<n> in the matrix); 0 when no NVLink joins them.
	NVLinks   int  `json:"nvlinks"`
	ViaSwitch bool `json:"via_nvswitch"`
	// PCIe is their closest common PCIe ancestor ("" when NVML did not say).
	PCIe PCIeLevel `json:"pcie"`
	// P2PRead and P2PNVLink: NVML's peer-to-peer read and NVLink status.
	P2PRead   P2PStatus `json:"p2p_read,omitempty"`
	P2PNVLink P2PStatus `json:"p2p_nvlink,omitempty"`
}

// Kind is the pair's entry in the matrix: NV<n>, else the PCIe level.
func (p Pair) Kind() string {
	switch {
	case p.NVLinks > 0:
		return fmt.Sprintf("NV%d", p.NVLinks)
	case p.PCIe != "":
		return string(p.PCIe)
	}
	return "?"
}

// Matrix is the GPU×GPU matrix of link kinds as nvidia-smi topo -m writes it:
// X on the diagonal, NV<n> where n NVLinks join a pair (directly or through
// an NVSwitch), else the PCIe level PIX, PXB, PHB, NODE or SYS.
func (m *Machine) Matrix() [][]string {
	n := len(m.GPUs)
	out := make([][]string, n)
	for i := range out {
		out[i] = make([]string, n)
		for j := range out[i] {
			if i == j {
				out[i][j] = "X"
			} else {
				out[i][j] = m.pair(i, j).Kind()
			}
		}
	}
	return out
}

func (m *Machine) pair(i, j int) Pair {
	if i < len(m.Pairs) && j < len(m.Pairs[i]) {
		return m.Pairs[i][j]
	}
	return Pair{}
}

// NVSwitches lists the distinct far ends of the machine's switch links by
// PCI bus id, sorted ("" stands for switches NVML gave no bus id for).
func (m *Machine) NVSwitches() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range m.GPUs {
		for _, l := range d.NVLinks {
			if l.Active && l.Switch && !seen[l.RemoteBusID] {
				seen[l.RemoteBusID] = true
				out = append(out, l.RemoteBusID)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Resolve works out, from the links' far ends, which links join two GPUs and
// which go to an NVSwitch, and the NVLink count of every pair. Discover calls
// it once the raw facts are in; P2P statuses must be filled before.
func (m *Machine) Resolve() {
	gpuAt := map[string]int{}
	for i, d := range m.GPUs {
		gpuAt[NormalizeBusID(d.BusID)] = i
	}
	reachedBy := map[string]map[int]bool{}
	for i, d := range m.GPUs {
		for _, l := range d.NVLinks {
			if l.Active && l.RemoteBusID != "" {
				b := NormalizeBusID(l.RemoteBusID)
				if reachedBy[b] == nil {
					reachedBy[b] = map[int]bool{}
				}
				reachedBy[b][i] = true
			}
		}
	}
	for i := range m.GPUs {
		for k := range m.GPUs[i].NVLinks {
			l := &m.GPUs[i].NVLinks[k]
			l.Peer, l.Switch = -1, false
			if !l.Active {
				continue
			}
			b := NormalizeBusID(l.RemoteBusID)
			j, isGPU := gpuAt[b]
			switch {
			case l.RemoteType == RemoteSwitch:
				l.Switch = true
			case isGPU && j != i && (l.RemoteType == RemoteGPU || l.RemoteType == RemoteUnknown):
				l.Peer = j
			case l.RemoteType == RemoteUnknown && b != "" && !isGPU && len(reachedBy[b]) >= 2:
				l.Switch = true
			}
		}
	}
	n := len(m.GPUs)
	if len(m.Pairs) != n {
		m.Pairs = make([][]Pair, n)
	}
	for i := range m.Pairs {
		if len(m.Pairs[i]) != n {
			m.Pairs[i] = make([]Pair, n)
		}
	}
	for i := 0; i < n; i++ {
		_, swi := m.GPUs[i].ActiveNVLinks()
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			p := &m.Pairs[i][j]
			p.NVLinks, p.ViaSwitch = 0, false
			for _, l := range m.GPUs[i].NVLinks {
				if l.Active && l.Peer == j {
					p.NVLinks++
				}
			}
			if p.NVLinks > 0 {
				continue
			}
			_, swj := m.GPUs[j].ActiveNVLinks()
			// Both on NVSwitch: joined unless NVML says NVLink P2P does not
			// work between them (a partitioned fabric, no fabric manager).
			if swi > 0 && swj > 0 && (p.P2PNVLink == "" || p.P2PNVLink == P2POK || p.P2PNVLink == P2PUnknown) {
				p.NVLinks, p.ViaSwitch = min(swi, swj), true
			}
		}
	}
}

// NormalizeBusID writes a PCI bus id as NVML's long form, upper case:
// "0000:1b:00.0" and "00000000:1B:00.0" both become "00000000:1B:00.0". An
// id it cannot parse is returned upper-cased and trimmed.
func NormalizeBusID(s string) string {
	s = strings.TrimSpace(s)
	var dom, bus, dev, fn uint32
	if n, err := fmt.Sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn); err == nil && n == 4 {
		return fmt.Sprintf("%08X:%02X:%02X.%X", dom, bus, dev, fn)
	}
	return strings.ToUpper(s)
}

// CPUList writes a set of CPU numbers as ranges: 0-3,8,10-11.
func CPUList(cpus []int) string {
	sort.Ints(cpus)
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			fmt.Fprintf(&b, "%d", cpus[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		}
		i = j + 1
	}
	return b.String()
}

// BitsSet lists the set bits of a mask held in 64-bit words, lowest first.
func BitsSet(words []uint64) []int {
	var out []int
	for w, x := range words {
		for b := 0; b < 64; b++ {
			if x&(1<<b) != 0 {
				out = append(out, w*64+b)
			}
		}
	}
	return out
}

// MatchPreset is the hardware preset of the GPUs' model, "" when they differ
// or partbench has none.
func MatchPreset(gpus []Device) string {
	for _, d := range gpus[1:] {
		if d.Name != gpus[0].Name {
			return ""
		}
	}
	model, _ := LookupGPUModel(gpus[0].Name)
	return model.Preset
}
