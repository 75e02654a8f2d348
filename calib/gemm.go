package calib

import (
	"fmt"
	"math"
	"time"

	"github.com/partbench/partbench/partition"
)

// DefaultShapeConfigs are the configs whose GEMM shapes are timed: the tiny
// test config the CPU backend runs, and the seed experiment's two strategies.
var DefaultShapeConfigs = []string{"test/tp2pp2-tiny", "tp8pp2", "layerwise16"}

// gemmShape is one distinct (M, N, K) of the Programs, and the shape timed.
type gemmShape struct {
	source  string
	m, n, k int
	mm, mn  int // measured M and N
	// elem is the element size in bytes (0: float32, the CPU backend's).
	elem int
}

// elemBytes is the element size: elem, or 4.
func (s gemmShape) elemBytes() float64 {
	if s.elem > 0 {
		return float64(s.elem)
	}
	return 4
}

func (s gemmShape) flops() float64 { return 2 * float64(s.mm) * float64(s.mn) * float64(s.k) }

// weightBytes and actBytes are the measured shape's bytes as the backend
// holds them (float32 on the CPU; the dtype's elements on a GPU), counted
// as partition counts a Gemm op's.
func (s gemmShape) weightBytes() float64 { return s.elemBytes() * float64(s.k) * float64(s.mn) }
func (s gemmShape) actBytes() float64 {
	return s.elemBytes() * (float64(s.mm)*float64(s.k) + float64(s.mm)*float64(s.mn))
}

// programShapes collects the distinct GEMM shapes of every rank's prefill
// and decode Programs of the named configs, in order of first appearance.
func programShapes(names []string) ([]gemmShape, error) {
	type key struct{ m, n, k int }
	seen := map[key]bool{}
	var out []gemmShape
	for _, name := range names {
		cfg, err := loadConfig(name)
		if err != nil {
			return nil, err
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for r := range plan.Ranks {
			for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
				if !cfg.Workload.HasPhase(string(ph)) {
					continue
				}
				for _, op := range plan.Program(r, ph).Ops {
					k := key{op.Rows, op.N, op.K}
					if op.Kind != partition.Gemm || seen[k] {
						continue
					}
					seen[k] = true
					out = append(out, gemmShape{source: fmt.Sprintf("%s %s %s", cfg.Name, ph, op.Tensor), m: op.Rows, n: op.N, k: op.K})
				}
			}
		}
	}
	return out, nil
}

// clip sets the measured shape: N is cut first, to keep the weight under
// weightCap and then the FLOPs under flopBudget (a GEMM's FLOPs per weight
// byte, M/2, do not depend on N); a prefill-sized M is cut to no less than
// 128 rows before N goes below 64; M is cut last.
func (s *gemmShape) clip(flopBudget, weightCap int64) {
	s.mm, s.mn = s.m, s.n
	floorN := min(s.n, 64)
	over := func() bool { return int64(s.flops()) > flopBudget }
	if w := weightCap / (4 * int64(s.k)); int64(s.mn) > w {
		s.mn = max(floorN, int(w))
	}
	if over() && s.mm > 128 {
		s.mm = max(128, int(float64(flopBudget)/(2*float64(s.mn)*float64(s.k))))
	}
	if over() {
		s.mn = max(floorN, int(float64(flopBudget)/(2*float64(s.mm)*float64(s.k))))
	}
	if over() {
		s.mm = max(1, int(float64(flopBudget)/(2*float64(s.mn)*float64(s.k))))
	}
}

// timeGEMM times out[mm, mn] = x[mm, k] @ w[k, mn] through g, the CPU
// backend's GEMM (cpuGEMM: the one its Gemm ops run, row-major, no
// transposes, β = 0), once per repeat; seconds per call.
func timeGEMM(g hostGEMM, s gemmShape, repeats int, minDur time.Duration) []float64 {
	x, w, out := make([]float32, s.mm*s.k), make([]float32, s.k*s.mn), make([]float32, s.mm*s.mn)
	for i := range x {
		x[i] = float32(i%97) * 1e-2
	}
	for i := range w {
		w[i] = float32(i%89) * 1e-2
	}
	ts := make([]float64, repeats)
	for r := range ts {
		ts[r] = timePer(minDur, func() { g.MatMul(s.mm, s.mn, s.k, x, w, out) })
	}
	return ts
}

// memFigures are the memory figures the GEMM fit holds fixed.
type memFigures struct {
	streamBytesPerS float64
	l2Bytes         float64 // usable
	l2BytesPerS     float64
}

// rooflineS is sim's op cost without the launch term, for a GEMM whose
// weights are re-read call after call (as in timeGEMM and in decode steps):
// max(FLOPs/F, HBM bytes/BW, L2 bytes/L2 BW), where the resident fraction
// min(1, usable L2 / weight bytes) of the weights is read from the cache and
// the rest, with the activations, from memory (efficiencies are 1).
func rooflineS(s gemmShape, flopsPerS float64, m memFigures) float64 {
	w := s.weightBytes()
	res := math.Min(1, m.l2Bytes/w)
	fromL2 := w * res
	hbm := s.actBytes() + w - fromL2
	return math.Max(s.flops()/flopsPerS, math.Max(hbm/m.streamBytesPerS, fromL2/m.l2BytesPerS))
}

// fitFLOPs is the F that makes rooflineS best reproduce the measured times
// (least squares of log time over the shapes, each shape weighted equally):
// a grid over 10^6…10^16 FLOP/s (a CPU core to ten times an H100's dense
// fp16), then gonum's Nelder–Mead around the best
// point. ok is false when the top of the range fits as well as the best F
// (the memory terms alone reach the measured times, so the shapes do not
// determine F).
func fitFLOPs(shapes []gemmShape, times []float64, m memFigures) (f float64, ok bool) {
	loss := func(lnF float64) float64 {
		var l float64
		for i, s := range shapes {
			d := math.Log(rooflineS(s, math.Exp(lnF), m)) - math.Log(times[i])
			l += d * d
		}
		return l
	}
	lo, hi := math.Log(1e6), math.Log(1e16)
	const steps = 500
	best, bestX := math.Inf(1), lo
	for i := 0; i <= steps; i++ {
		x := lo + (hi-lo)*float64(i)/steps
		if l := loss(x); l < best {
			best, bestX = l, x
		}
	}
	h := (hi - lo) / steps
	if loss(hi) <= best*(1+1e-9) {
		// The top of the range fits as well as the best: the memory terms
		// alone reach the measured times, and F has at most a lower bound.
		return 0, false
	}
	x := minimize(func(v []float64) float64 {
		if v[0] < lo || v[0] > hi {
			return math.Inf(1)
		}
		return loss(v[0])
	}, []float64{bestX}, h)
	return math.Exp(x[0]), true
}
