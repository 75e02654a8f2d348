package topologytest

import (
	"fmt"

	"github.com/partbench/partbench/topology"
)

// H100SXM is the GPU of the h100-sxm hardware preset
// (configs/hardware/h100-sxm.toml, where each figure's source is given);
// TestSystemsMatchPresets holds the two equal.
func H100SXM() topology.GPU {
	return topology.GPU{
		Name:              "H100-SXM5-80GB",
		FP32FLOPsPerS:     66.9e12,
		FP16FLOPsPerS:     989.4e12,
		BF16FLOPsPerS:     989.4e12,
		FP8FLOPsPerS:      1978.9e12,
		HBMBytes:          85520809984,
		HBMReservedBytes:  2147483648,
		HBMBytesPerS:      3.35e12,
		L2Bytes:           52428800,
		L2UsableFraction:  1.0,
		L2BytesPerS:       5.5e12,
		SMs:               132,
		SharedMemPerSM:    233472,
		KernelLaunchS:     6e-6,
		ComputeEfficiency: 0.70,
		HBMEfficiency:     0.90,
		GemmTileM:         128,
		GemmTileN:         128,
		GemmMinTileM:      16,
		StepOverheadS:     2e-3,
		GraphLaunchS:      10e-6,
		GraphKernelS:      1.5e-6,
		Ranges: topology.ParamRanges{
			ComputeEfficiency: [2]float64{0.5, 0.8},
			HBMEfficiency:     [2]float64{0.8, 0.95},
			KernelLaunchS:     [2]float64{3e-6, 10e-6},
			StepOverheadS:     [2]float64{0.5e-3, 4e-3},
		},
	}
}

// H200SXM is the GPU of the h200-sxm hardware preset
// (configs/hardware/h200-sxm.toml); TestSystemsMatchPresets holds them equal.
func H200SXM() topology.GPU {
	g := H100SXM()
	g.Name = "H200-SXM-141GB"
	g.HBMBytes = 141000000000
	g.HBMBytesPerS = 4.8e12
	return g
}

// nvswitchLink is the path between two GPUs of an HGX H100/H200 board: 18
// NVLink 4 links per GPU into third-generation NVSwitches (with NVLink SHARP).
func nvswitchLink() topology.Link {
	return topology.Link{
		Class:     topology.NVLink,
		Name:      "NVLink 4 via NVSwitch",
		BytesPerS: 18 * topology.NVLinkBytesPerSPerLink(4),
		LatencyS:  topology.NVLinkLatencyS,
		Switch:    true,
	}
}

// ndrLink is one 400 Gb/s NDR InfiniBand port per GPU, rail-aligned.
func ndrLink() topology.Link {
	return topology.Link{
		Class:     topology.Network,
		Name:      "NDR InfiniBand 400 Gb/s, one port per GPU",
		BytesPerS: topology.InfiniBandNDRBytesPerS,
		LatencyS:  topology.NetworkLatencyS,
	}
}

// DGXH100 is nodes DGX H100 systems (nodes ≥ 1): 8 H100 SXM per node on
// NVSwitch (18 NVLink 4 links per GPU into 4 NVSwitch chips), one NDR
// 400 Gb/s NIC per GPU between nodes. DGXH100(2) is the dgx-h100x2 preset.
func DGXH100(nodes int) topology.System {
	return topology.System{
		GPU: H100SXM(),
		Topology: topology.Topology{
			Name:        fmt.Sprintf("dgx-h100x%d", nodes),
			Nodes:       nodes,
			GPUsPerNode: 8,
			Intra:       nvswitchLink(),
			Inter:       ndrLink(),
		},
	}
}

// H200Node is one node of 8 H200 SXM on NVSwitch (as in a DGX H200), with
// an NDR NIC per GPU for when nodes are added.
func H200Node() topology.System {
	return topology.System{
		GPU: H200SXM(),
		Topology: topology.Topology{
			Name:        "h200-node",
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       nvswitchLink(),
			Inter:       ndrLink(),
		},
	}
}

// PCIeBox8 is one node of 8 PCIe Gen5 x16 GPUs without NVLink, four under
// each of two PCIe switches, one switch per CPU socket (NUMA node). GPUs in
// different halves talk through both switches and the inter-socket link
// (SYS), which the Topology's single intra-node path takes as its
// worst case. The GPU is the h100-sxm spec, which the pcie-gen5 preset is
// used with (partbench has no H100 PCIe preset).
func PCIeBox8() topology.System {
	return topology.System{
		GPU: H100SXM(),
		Topology: topology.Topology{
			Name:        "pcie-box8",
			Nodes:       1,
			GPUsPerNode: 8,
			Intra: topology.Link{
				Class:     topology.PCIe,
				Name:      "PCIe Gen5 x16 through two switches, SYS between them",
				BytesPerS: topology.PCIeBytesPerS(5, 16),
				LatencyS:  topology.PCIeLatencyS,
			},
		},
	}
}
