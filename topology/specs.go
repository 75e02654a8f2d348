package topology

import "strings"

// Link figures partbench uses for a discovered machine. Bandwidths are per GPU
// and per direction, like every Link.BytesPerS.

// nvlinkGeneration is one NVLink generation as its launch GPU's whitepaper or
// datasheet states it: the links per GPU and their total bidirectional bandwidth.
type nvlinkGeneration struct {
	linksPerGPU         int
	totalBidirBytesPerS float64
}

// nvlinkGenerations are keyed by NVLink generation (1 = NVLink 1.0, …).
var nvlinkGenerations = map[int]nvlinkGeneration{
	1: {4, 160e9},   // NVIDIA Tesla P100 whitepaper: 4 NVLinks, 160 GB/s bidirectional in all
	2: {6, 300e9},   // NVIDIA Tesla V100 whitepaper: 6 NVLinks, 300 GB/s in all
	3: {12, 600e9},  // NVIDIA A100 whitepaper: 12 NVLinks, 600 GB/s in all
	4: {18, 900e9},  // NVIDIA H100 whitepaper/datasheet: 18 NVLinks, 900 GB/s in all
	5: {18, 1800e9}, // NVIDIA B200 datasheet: 18 NVLinks (fifth generation), 1.8 TB/s in all
}

// NVLinkBytesPerSPerLink is the bandwidth of one NVLink of generation gen in
// one direction: the generation's total over its links, halved for one
// direction (NVLink 1: 20 GB/s; NVLink 2, 3, 4: 25 GB/s; NVLink 5: 50 GB/s).
// It is 0 for a generation partbench has no figure for.
func NVLinkBytesPerSPerLink(gen int) float64 {
	g, ok := nvlinkGenerations[gen]
	if !ok {
		return 0
	}
	return g.totalBidirBytesPerS / float64(g.linksPerGPU) / 2
}

// NVLinkGeneration is the NVLink generation of a GPU of compute capability
// major.minor (Pascal P100 6.0: 1, Volta 7.0: 2, Ampere 8.x: 3, Hopper 9.0: 4,
// Blackwell 10.x: 5). When the architecture says nothing (0), it falls back to
// what NVML reported. NVML's nvmlDeviceGetNvLinkVersion returns a value of
// nvmlNvlinkVersion_t (1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0,
// 7 = 5.0, 8 = 6.0), but A100s report 5 (hwloc issue #658) and H100s 7
// (TensorRT-LLM's cluster_info.py maps 7 to NVLink 4), so the architecture
// is trusted first.
func NVLinkGeneration(ccMajor, ccMinor int, nvmlVersion uint32) int {
	switch {
	case ccMajor == 6 && ccMinor == 0:
		return 1
	case ccMajor == 7 && ccMinor == 0:
		return 2
	case ccMajor == 8 && (ccMinor == 0 || ccMinor == 6):
		return 3
	case ccMajor == 9:
		return 4
	case ccMajor == 10:
		return 5
	}
	// nvmlNvlinkVersion_t, as the header defines it.
	switch nvmlVersion {
	case 1:
		return 1
	case 2, 3:
		return 2
	case 4, 5:
		return 3
	case 6:
		return 4
	case 7:
		return 5
	case 8:
		return 6
	}
	return 0
}

// pcieGeneration is one PCIe generation's signalling rate per lane and the
// fraction of it that carries data after line encoding (PCI-SIG base specs).
type pcieGeneration struct {
	transfersPerS float64
	encoding      float64
	encodingName  string
}

var pcieGenerations = map[int]pcieGeneration{
	1: {2.5e9, 8.0 / 10, "8b/10b"},      // PCIe 1.x: 2.5 GT/s, 8b/10b
	2: {5e9, 8.0 / 10, "8b/10b"},        // PCIe 2.x: 5 GT/s, 8b/10b
	3: {8e9, 128.0 / 130, "128b/130b"},  // PCIe 3.x: 8 GT/s, 128b/130b
	4: {16e9, 128.0 / 130, "128b/130b"}, // PCIe 4.0: 16 GT/s, 128b/130b
	5: {32e9, 128.0 / 130, "128b/130b"}, // PCIe 5.0: 32 GT/s, 128b/130b
	6: {64e9, 1, "FLIT"},                // PCIe 6.0: 64 GT/s PAM4 in FLIT mode; FEC/CRC overhead (≈6 %) not subtracted
}

// PCIeBytesPerS is the data rate of a PCIe link of generation gen and width
// lanes in one direction: GT/s × lanes × encoding / 8 (Gen5 x16: 63.0 GB/s,
// Gen4 x16: 31.5 GB/s). It is 0 for an unknown generation or width.
func PCIeBytesPerS(gen, lanes int) float64 {
	g, ok := pcieGenerations[gen]
	if !ok || lanes < 1 {
		return 0
	}
	return g.transfersPerS * float64(lanes) * g.encoding / 8
}

// InfiniBandNDRBytesPerS is one NDR port in one direction: 400 Gb/s
// (InfiniBand Trade Association NDR; ConnectX-7) / 8 bits per byte.
const InfiniBandNDRBytesPerS = 400e9 / 8

// Latencies partbench assumes for one message on a discovered path; the
// presets use the same figures. `partbench calibrate` replaces them with
// measured ones.
const (
	// NVLinkLatencyS: assumption, one NVLink hop (direct or through an
	// NVSwitch), of the order of a microsecond.
	NVLinkLatencyS = 1.0e-6
	// PCIeLatencyS: assumption, a peer-to-peer write through a PCIe switch or
	// the host bridge.
	PCIeLatencyS = 2.0e-6
	// NetworkLatencyS: assumption, a GPU-direct RDMA message through one
	// network switch.
	NetworkLatencyS = 5.0e-6
)

// GPUModel is what partbench knows about a GPU model that NVML does not
// report (L2 size) or may not (SM count), and which hardware preset
// describes it.
type GPUModel struct {
	// Model is a short name, e.g. "H100 SXM5".
	Model string `json:"model"`
	// Preset is the hardware preset (configs/hardware/<preset>.toml) for the
	// model; "" when partbench has none.
	Preset string `json:"preset,omitempty"`
	// SMs and L2Bytes as the model's whitepaper states them; a test checks
	// they equal the preset's.
	SMs     int   `json:"sms"`
	L2Bytes int64 `json:"l2_bytes"`

	all, none []string // upper-case substrings the NVML name must (not) contain
}

// gpuModels are tried in order; the first whose substrings match wins.
var gpuModels = []GPUModel{
	// NVIDIA H100 whitepaper: 132 SMs on SXM5, 114 on PCIe, 50 MB L2 (50 MiB as
	// cudaDevAttrL2CacheSize reports it). NVML names the SXM5 part "NVIDIA H100 80GB HBM3".
	{Model: "H100 SXM5", Preset: "h100-sxm", SMs: 132, L2Bytes: 50 << 20, all: []string{"H100"}, none: []string{"PCIE", "NVL"}},
	{Model: "H100 PCIe", SMs: 114, L2Bytes: 50 << 20, all: []string{"H100", "PCIE"}},
	// NVIDIA H200 datasheet: the H100 SXM5 die with HBM3e: 132 SMs, 50 MB L2.
	{Model: "H200 SXM", Preset: "h200-sxm", SMs: 132, L2Bytes: 50 << 20, all: []string{"H200"}, none: []string{"NVL", "GH200"}},
	// NVIDIA A100 whitepaper: 108 SMs, 40 MB L2 (40 MiB as the attribute reports).
	{Model: "A100 SXM4 80GB", Preset: "a100-sxm-80g", SMs: 108, L2Bytes: 40 << 20, all: []string{"A100", "SXM", "80GB"}},
	{Model: "A100", SMs: 108, L2Bytes: 40 << 20, all: []string{"A100"}},
}

// LookupGPUModel finds the model of a GPU by the name NVML reports.
func LookupGPUModel(nvmlName string) (GPUModel, bool) {
	name := strings.ToUpper(nvmlName)
next:
	for _, m := range gpuModels {
		for _, s := range m.all {
			if !strings.Contains(name, s) {
				continue next
			}
		}
		for _, s := range m.none {
			if strings.Contains(name, s) {
				continue next
			}
		}
		return m, true
	}
	return GPUModel{}, false
}

// GPUModels lists the models partbench knows by name.
func GPUModels() []GPUModel { return append([]GPUModel(nil), gpuModels...) }

// FP32CoresPerSM is the number of FP32 lanes per SM by compute capability
// (CUDA C++ Programming Guide, "Arithmetic Instructions": 32-bit
// floating-point add/multiply results per clock cycle per multiprocessor),
// used to turn NVML's core count into SMs.
func FP32CoresPerSM(major, minor int) int {
	switch {
	case major == 6 && minor == 0, major == 7, major == 8 && minor == 0:
		return 64
	case major == 6, major == 8, major == 9, major == 10, major == 12:
		return 128
	}
	return 0
}
