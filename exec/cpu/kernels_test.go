package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.Float64()*2 - 1)
	}
	return v
}

func close32(a float32, b float64, tol float64) bool {
	return math.Abs(float64(a)-b) <= tol*math.Max(1, math.Abs(b))
}

func TestRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, n = 3, 16
	x, w := randVec(rng, rows*n), randVec(rng, n)
	out := make([]float32, rows*n)
	rmsNorm(x, out, w, rows, 1e-5)
	for r := 0; r < rows; r++ {
		var ss float64
		for i := 0; i < n; i++ {
			ss += float64(x[r*n+i]) * float64(x[r*n+i])
		}
		rms := math.Sqrt(ss/n + 1e-5)
		for i := 0; i < n; i++ {
			if want := float64(x[r*n+i]) / rms * float64(w[i]); !close32(out[r*n+i], want, 1e-6) {
				t.Fatalf("row %d elem %d: %g, want %g", r, i, out[r*n+i], want)
			}
		}
	}
	// A row of equal values v normalizes to sign(v)·w (up to ε): here 2/√(4+ε).
	one := []float32{2, 2, 2, 2}
	res := make([]float32, 4)
	rmsNorm(one, res, []float32{1, 1, 1, 1}, 1, 1e-5)
	if want := 2 / math.Sqrt(4+1e-5); !close32(res[0], want, 1e-7) {
		t.Fatalf("constant row: %g, want %g", res[0], want)
	}
}

func TestRope(t *testing.T) {
	// head_dim 4, position 3: pair 0 turns by 3 rad, pair 1 by 3·10000^(−1/2) = 0.03 rad.
	v := []float32{1, 0, 0, 1}
	rope(v, 3, 10000)
	want := []float64{math.Cos(3), math.Sin(3), -math.Sin(0.03), math.Cos(0.03)}
	for i := range v {
		if !close32(v[i], want[i], 1e-6) {
			t.Fatalf("elem %d: %g, want %g", i, v[i], want[i])
		}
	}
	// Position 0 is the identity.
	u := []float32{0.5, -1, 2, 3}
	rope(u, 0, 10000)
	if u[0] != 0.5 || u[1] != -1 || u[2] != 2 || u[3] != 3 {
		t.Fatalf("position 0 changed %v", u)
	}
	// q·k depends only on the distance between positions.
	rng := rand.New(rand.NewPCG(3, 4))
	q, k := randVec(rng, 8), randVec(rng, 8)
	dot := func(qp, kp int) float64 {
		a, b := append([]float32(nil), q...), append([]float32(nil), k...)
		rope(a, qp, 10000)
		rope(b, kp, 10000)
		var d float64
		for i := range a {
			d += float64(a[i]) * float64(b[i])
		}
		return d
	}
	if d1, d2 := dot(7, 4), dot(12, 9); math.Abs(d1-d2) > 1e-5 {
		t.Fatalf("q·k at (7,4) = %g, at (12,9) = %g: not relative", d1, d2)
	}
}

// naiveRope rotates in float64.
func naiveRope(v []float64, pos int) {
	hd := len(v)
	for i := 0; i < hd/2; i++ {
		a := float64(pos) / math.Pow(10000, float64(2*i)/float64(hd))
		x0, x1 := v[2*i], v[2*i+1]
		v[2*i], v[2*i+1] = x0*math.Cos(a)-x1*math.Sin(a), x0*math.Sin(a)+x1*math.Cos(a)
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestAttentionMatchesNaive checks rotary, cache append, causal masking and
// grouped-query attention against a float64 reference written from the
// definitions: 2 sequences (global 1 and 2) of 3 new tokens after 2 cached
// ones, 4 query heads sharing 2 kv heads of dimension 4.
func TestAttentionMatchesNaive(t *testing.T) {
	s := attnShape{seq0: 1, seqs: 2, q: 3, past: 2, hl: 4, kvl: 2, hd: 4, theta: 10000}
	rng := rand.New(rand.NewPCG(5, 6))
	qw, kw := s.hl*s.hd, s.kvl*s.hd
	row := qw + 2*kw
	cache := newKVCache(4, 8, kw)
	for seq := 0; seq < 4; seq++ {
		for pos := 0; pos < s.past; pos++ {
			copy(cache.at(cache.k, seq, pos), randVec(rng, kw))
			copy(cache.at(cache.v, seq, pos), randVec(rng, kw))
		}
	}
	qkv := randVec(rng, s.seqs*s.q*row)
	orig := append([]float32(nil), qkv...)
	oldK, oldV := append([]float32(nil), cache.k...), append([]float32(nil), cache.v...)
	ao := make([]float32, s.seqs*s.q*qw)
	attention(qkv, ao, cache, s)

	for i := 0; i < s.seqs; i++ {
		seq := s.seq0 + i
		// Keys and values at every position, new ones rotated at their position.
		keys, vals := map[int][]float64{}, map[int][]float64{}
		for pos := 0; pos < s.past; pos++ {
			o := (seq*cache.context + pos) * kw
			keys[pos], vals[pos] = f64(oldK[o:o+kw]), f64(oldV[o:o+kw])
		}
		for j := 0; j < s.q; j++ {
			r := orig[(i*s.q+j)*row:]
			k := f64(r[qw : qw+kw])
			for h := 0; h < s.kvl; h++ {
				naiveRope(k[h*s.hd:(h+1)*s.hd], s.past+j)
			}
			keys[s.past+j], vals[s.past+j] = k, f64(r[qw+kw:qw+2*kw])
		}
		for j := 0; j < s.q; j++ {
			pos := s.past + j
			// The cache now holds the rotated key and the value of this token.
			for e := 0; e < kw; e++ {
				if !close32(cache.at(cache.k, seq, pos)[e], keys[pos][e], 1e-6) || cache.at(cache.v, seq, pos)[e] != float32(vals[pos][e]) {
					t.Fatalf("cache seq %d pos %d elem %d: k %g v %g, want %g %g", seq, pos, e,
						cache.at(cache.k, seq, pos)[e], cache.at(cache.v, seq, pos)[e], keys[pos][e], vals[pos][e])
				}
			}
			for h := 0; h < s.hl; h++ {
				q := f64(orig[(i*s.q+j)*row+h*s.hd : (i*s.q+j)*row+(h+1)*s.hd])
				naiveRope(q, pos)
				kvh := h / (s.hl / s.kvl) // 2 query heads per kv head
				var w []float64
				var z float64
				for tpos := 0; tpos <= pos; tpos++ { // causal: positions up to itself
					var d float64
					for e := range q {
						d += q[e] * keys[tpos][kvh*s.hd+e]
					}
					w = append(w, math.Exp(d/math.Sqrt(float64(s.hd))))
					z += w[tpos]
				}
				for e := 0; e < s.hd; e++ {
					var want float64
					for tpos := range w {
						want += w[tpos] / z * vals[tpos][kvh*s.hd+e]
					}
					got := ao[(i*s.q+j)*qw+h*s.hd+e]
					if !close32(got, want, 1e-5) {
						t.Fatalf("seq %d token %d head %d elem %d: %g, want %g", seq, j, h, e, got, want)
					}
				}
			}
		}
	}
	// Other sequences' cache is untouched.
	for _, seq := range []int{0, 3} {
		for pos := s.past; pos < 8; pos++ {
			for _, v := range cache.at(cache.k, seq, pos) {
				if v != 0 {
					t.Fatalf("sequence %d position %d written", seq, pos)
				}
			}
		}
	}
}

func TestActivations(t *testing.T) {
	// silu(1) = 1/(1+e⁻¹); gelu_tanh(1) = 0.5(1 + tanh(√(2/π)·1.044715)).
	if got, want := silu(1), 1/(1+math.Exp(-1)); !close32(got, want, 1e-7) {
		t.Fatalf("silu(1) = %g, want %g", got, want)
	}
	if got, want := gelu(1), 0.8411919906082768; !close32(got, want, 1e-7) {
		t.Fatalf("gelu(1) = %g, want %g", got, want)
	}
	// Gated rows are [gate | up]: a = silu(gate)·up.
	u := []float32{1, 0, 2, 3}
	a := make([]float32, 2)
	activate(u, a, 1, 2, true)
	if !close32(a[0], 2*float64(silu(1)), 1e-7) || a[1] != 0 {
		t.Fatalf("gated activation %v", a)
	}
	activate([]float32{1, -1}, a, 1, 2, false)
	if a[0] != gelu(1) || a[1] != gelu(-1) {
		t.Fatalf("gelu activation %v", a)
	}
}
