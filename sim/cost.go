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
	TimeS float64
	// FixedS is the part of TimeS that is fixed cost (launch, host step).
	FixedS   float64
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
//	max(FLOPs / (peak·eff·shape), HBM bytes / (BW·eff), L2 bytes / L2 BW) + launch
//
// where shape is GemmShapeEfficiency for a GEMM (1 otherwise)
//
// where the resident fraction of reusable weights comes from L2 (except on
// the pass that first loads them) and everything else from HBM.
func computeCost(g *topology.GPU, dtype string, op *partition.Op, residency float64, firstTouch bool, phase partition.Phase) OpCost {
	w := float64(op.WeightBytes)
	fromL2 := 0.0
	if reusable(op) && !firstTouch {
		fromL2 = w * residency
	}
	hbm := float64(op.ActBytes+op.KVReadBytes+op.KVWriteBytes) + w - fromL2
	tc := float64(op.FLOPs) / (g.PeakFLOPsPerS(dtype) * opComputeEfficiency(g, op))
	th := hbm / (g.HBMBytesPerS * g.HBMEfficiency)
	tl := fromL2 / g.L2BytesPerS
	t, b := tc, BoundCompute
	if th > t {
		t, b = th, BoundHBM
	}
	if tl > t {
		t, b = tl, BoundL2
	}
	fixed := launchS(g, phase) + stepFixedS(g, phase, op)
	if fixed > t {
		b = BoundLatency
	}
	return OpCost{TimeS: t + fixed, FixedS: fixed, Bound: b, HBMBytes: int64(math.Round(hbm)), L2Bytes: int64(math.Round(fromL2))}
}

// launchS is the fixed cost of launching one kernel in a phase: KernelLaunchS
// from the host, or GraphKernelS inside a CUDA graph (decode steps with
// CUDAGraphs; prefill shapes vary and run ungraphed, as in vLLM and
// TensorRT-LLM).
func launchS(g *topology.GPU, phase partition.Phase) float64 {
	if g.CUDAGraphs && phase == partition.Decode {
		return g.GraphKernelS
	}
	return g.KernelLaunchS
}

// graphTableS is the time of a compute op priced from the op-time table at
// t, as phase runs it: in a decode step run as a CUDA graph (CUDAGraphs),
// t less GraphOpSavedS — the table times each op on a stream with a mark
// after it, which the graph's replay of the same kernels does not hold
// (docs/calibration.md, "The decode graph against the op-time table") —
// never below 0: an op may have no kernel of its own in the graph (a norm
// fused into the residual before it, whose table time is its mark alone);
// t elsewhere.
func graphTableS(g *topology.GPU, phase partition.Phase, t float64) float64 {
	if s := graphOpSavedS(g, phase); s > 0 {
		return max(t-s, 0)
	}
	return t
}

// graphOpSavedS is GraphOpSavedS where phase runs as a CUDA graph, else 0.
func graphOpSavedS(g *topology.GPU, phase partition.Phase) float64 {
	if g.CUDAGraphs && phase == partition.Decode {
		return g.GraphOpSavedS
	}
	return 0
}

// GraphOpSavedS is what sim takes off each compute op of plan's phase that
// the op-time table prices, where the phase runs as a CUDA graph
// (graphTableS; less where the floor holds it): the op check adds it back,
// as it compares the modeled ops with ops timed one by one. 0 elsewhere
// (and without a plan).
func GraphOpSavedS(plan *partition.Plan, phase partition.Phase) float64 {
	if plan == nil {
		return 0
	}
	return graphOpSavedS(&plan.System.GPU, phase)
}

// hostOpS is the host's time to queue one compute op where phase runs
// eagerly, op by op (prefill; decode without CUDAGraphs), else 0
// (topology.GPU.HostOpS). The executor queues a pass from the sync that
// ended the last, so the timeline starts a pass's i-th compute op no
// earlier than i × this after the pass's start, its wait for the host part
// of its slice (as a launch cost is: busy, priced by what priced the op).
// The quick estimate charges each such op at least this (the host never
// ahead of the device).
func hostOpS(g *topology.GPU, phase partition.Phase) float64 {
	if g.CUDAGraphs && phase == partition.Decode {
		return 0
	}
	return g.HostOpS
}

// stepFixedS is the per-pass host cost of an op (docs/costmodel.md, "Fixed
// costs"). On the sample op (once per forward pass on the last stage):
// StepOverheadS for scheduling and sampling, StepPerSeqS per sequence, plus
// GraphLaunchS when the decode step is one CUDA graph. On the input op
// (first stage): StepPerTokenS per token the pass schedules.
func stepFixedS(g *topology.GPU, phase partition.Phase, op *partition.Op) float64 {
	switch op.Kind {
	case partition.Input:
		return g.StepPerTokenS * float64(op.Rows)
	case partition.Sample:
		t := g.StepOverheadS + g.StepPerSeqS*float64(op.Seqs)
		if g.CUDAGraphs && phase == partition.Decode {
			t += g.GraphLaunchS
		}
		return t
	}
	return 0
}
