package sim

import (
	"math"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// GemmShapeEfficiency is the fraction of a GEMM's tile work that is useful:
// the product of
//
//   - tile efficiency: the output [M, N] is cut into tm × tn tiles; tiles on
//     the edge are padded, so only M·N of ⌈M/tm⌉·tm · ⌈N/tn⌉·tn computed
//     outputs count. tm is the smallest power of two ≥ M from GemmMinTileM up
//     to GemmTileM (cuBLAS and CUTLASS pick short tiles for few rows);
//   - wave efficiency: the T = ⌈M/tm⌉·⌈N/tn⌉ tiles run in ⌈T/SMs⌉ waves of one
//     tile per SM; a partial last wave leaves SMs idle: T / (⌈T/SMs⌉·SMs).
//
// The compute time of the GEMM is FLOPs / (peak · ComputeEfficiency · this),
// so it never drops below the roofline (this is ≤ 1). It is 1 when the GPU
// has no tile shape (GemmTileM = 0) or the op is not a GEMM. LLMCompass
// (Zhang et al., ISCA 2024) and NVIDIA's "Matrix Multiplication Background
// User's Guide" (wave and tile quantization) reason the same way.
func GemmShapeEfficiency(g *topology.GPU, m, n int) float64 {
	if g.GemmTileM <= 0 || g.GemmTileN <= 0 || m <= 0 || n <= 0 || g.SMs <= 0 {
		return 1
	}
	tm := max(1, g.GemmMinTileM)
	for tm < m && tm < g.GemmTileM {
		tm *= 2
	}
	tm = min(tm, g.GemmTileM)
	tn := g.GemmTileN
	rows, cols := ceilDiv(m, tm), ceilDiv(n, tn)
	tileEff := float64(m) * float64(n) / (float64(rows*tm) * float64(cols*tn))
	tiles := rows * cols
	waves := ceilDiv(tiles, g.SMs)
	waveEff := float64(tiles) / float64(waves*g.SMs)
	return tileEff * waveEff
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// opComputeEfficiency is the fraction of the dtype's peak an op's FLOPs run at.
func opComputeEfficiency(g *topology.GPU, op *partition.Op) float64 {
	e := g.ComputeEfficiency
	if op.Kind == partition.Gemm {
		e *= GemmShapeEfficiency(g, op.Rows, op.N)
	}
	return math.Max(e, 1e-9)
}
