package cuda

import "math"

// The Go model of split-KV decode attention (splitkv.cu, flash-decoding):
// each query row's keys [0, n) are cut into splits of splitKVChunk(n, s)
// positions; split k computes over its keys, in fp32 with base-2 scores,
// the max m_k, the sum l_k = Σ 2^(x − m_k) and the unnormalized
// accumulator a_k = Σ 2^(x − m_k)·v (a split without keys has m_k = −∞,
// l_k = 0, a_k = 0); the merge takes M = max m_k and writes
// Σ a_k·2^(m_k − M) / Σ l_k·2^(m_k − M), rounded to the storage type.
// Only the final output is rounded: the partials stay fp32 in a workspace.

// splitKVChunk is the keys per split when n keys are cut into s splits
// (the last split may be shorter, trailing ones empty).
func splitKVChunk(n, s int) int { return (n + s - 1) / s }

// splitKVPartial is one split's (m, l, a[hd]).
type splitKVPartial struct {
	m, l float32
	a    []float32
}

// splitKVModel writes to ao the attention of every query of g computed as
// split-KV decode does with s splits per row (causal: query j sees
// n = past + j + 1 keys; bidirectional: past + q).
func splitKVModel(g attnGeom, s int, round func(float32) float32, qkv, kc, vc, ao []float32) {
	hd, row, kvw := g.hd, (g.hl+2*g.kvl)*g.hd, g.kvl*g.hd
	group := g.hl / g.kvl
	sl2 := g.scaleLog2()
	parts := make([]splitKVPartial, s)
	for k := range parts {
		parts[k].a = make([]float32, hd)
	}
	for i := 0; i < g.seqs; i++ {
		cache := (g.seq0 + i) * g.context * kvw
		for j := 0; j < g.q; j++ {
			n := g.past + j + 1
			if g.bidir {
				n = g.keys()
			}
			chunk := splitKVChunk(g.keys(), s) // from the call's longest row, as the kernel reads *pos + q
			for h := 0; h < g.hl; h++ {
				qv := qkv[(i*g.q+j)*row+h*hd:][:hd]
				kvh := h / group
				for k := range parts {
					p := &parts[k]
					p.m, p.l = float32(math.Inf(-1)), 0
					clear(p.a)
					lo, hi := k*chunk, min((k+1)*chunk, n)
					for t := lo; t < hi; t++ {
						kt := kc[cache+t*kvw+kvh*hd:][:hd]
						var d float32
						for e := range qv {
							d += qv[e] * kt[e]
						}
						x := d * sl2
						mn := max(p.m, x)
						corr := float32(math.Exp2(float64(p.m - mn)))
						w := float32(math.Exp2(float64(x - mn)))
						p.l = p.l*corr + w
						vt := vc[cache+t*kvw+kvh*hd:][:hd]
						for e := range p.a {
							p.a[e] = p.a[e]*corr + w*vt[e]
						}
						p.m = mn
					}
				}
				splitKVMerge(parts, ao[(i*g.q+j)*g.hl*hd+h*hd:][:hd], round)
			}
		}
	}
}

// splitKVMerge is the second kernel: out = Σ a_k·2^(m_k − M) / Σ l_k·2^(m_k − M).
func splitKVMerge(parts []splitKVPartial, out []float32, round func(float32) float32) {
	M := float32(math.Inf(-1))
	for _, p := range parts {
		M = max(M, p.m)
	}
	var L float32
	w := make([]float32, len(parts))
	for k, p := range parts {
		if p.l > 0 { // an empty split weighs nothing (and its m = −∞ must not meet M = −∞)
			w[k] = float32(math.Exp2(float64(p.m - M)))
			if flashBug == "merge" {
				w[k] = 1
			}
		}
		L += p.l * w[k]
	}
	inv := 1 / L
	for d := range out {
		var acc float32
		for k, p := range parts {
			acc += p.a[d] * w[k]
		}
		out[d] = round(acc * inv)
	}
}
