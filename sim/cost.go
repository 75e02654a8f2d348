package sim

import (
	"math"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// Bound is what limits an op (or a phase).
type Bound string

const (
	BoundCompute Bound = "compute"
	BoundHBM     Bound = "hbm"
	BoundL2      Bound = "l2"
	BoundLatency Bound = "latency" // fixed costs: kernel launch, link latency
	BoundNVLink  Bound = "nvlink"
	BoundPCIe    Bound = "pcie"
	BoundNetwork Bound = "network"
	BoundBubble  Bound = "bubble" // waiting on other ranks (pipeline fill/drain, stragglers)
	// BoundMeasured marks compute whose time was measured (rank emulation), not modeled.
	BoundMeasured Bound = "measured-compute"
)

func linkBound(c topology.LinkClass) Bound {
	switch c {
	case topology.NVLink:
		return BoundNVLink
	case topology.PCIe:
		return BoundPCIe
	case topology.Network:
		return BoundNetwork
	}
	return BoundLatency
}

// OpCost is the modeled time of one compute op and the bytes it moves.
type OpCost struct {
	TimeS    float64
	Bound    Bound
	HBMBytes int64 // bytes read or written in HBM
	L2Bytes  int64 // weight bytes served from L2
}

// reusable reports whether an op's weights are re-read on every pass (and
// so may stay in L2); an embedding lookup touches different rows each time.
func reusable(op *partition.Op) bool {
	return op.Kind == partition.Gemm || op.Kind == partition.Norm
}

// computeCost is the roofline time of a compute op:
//
//	max(FLOPs / (peak·eff), HBM bytes / (BW·eff), L2 bytes / L2 BW) + launch
//
// where the resident fraction of reusable weights comes from L2 (except on
// the pass that first loads them) and everything else from HBM.
func computeCost(g topology.GPU, dtype string, op *partition.Op, residency float64, firstTouch bool) OpCost {
	w := float64(op.WeightBytes)
	fromL2 := 0.0
	if reusable(op) && !firstTouch {
		fromL2 = w * residency
	}
	hbm := float64(op.ActBytes+op.KVReadBytes+op.KVWriteBytes) + w - fromL2
	tc := float64(op.FLOPs) / (g.PeakFLOPsPerS(dtype) * g.ComputeEfficiency)
	th := hbm / (g.HBMBytesPerS * g.HBMEfficiency)
	tl := fromL2 / g.L2BytesPerS
	t, b := tc, BoundCompute
	if th > t {
		t, b = th, BoundHBM
	}
	if tl > t {
		t, b = tl, BoundL2
	}
	if g.KernelLaunchS > t {
		b = BoundLatency
	}
	return OpCost{TimeS: t + g.KernelLaunchS, Bound: b, HBMBytes: int64(math.Round(hbm)), L2Bytes: int64(math.Round(fromL2))}
}
