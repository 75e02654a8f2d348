package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The norms and the rotary table compute the same arithmetic as the
// reference kernels (kernels_ref_test.go) in the same order, so their
// outputs are equal bit for bit; SiLU, GELU (as x·σ(2z)) and softmax use expf (float32, ≤ 2
// ulp) where the reference used math.Exp in float64; attention sums q·k in four partial sums
// (dot32), so its outputs agree to float32 rounding: a score of hd ≤ 16
// terms of |x| ≤ 1 moves by at most a few ulp (~1e-6 relative), and a
// softmax-weighted mean of values in [−1, 1] by as little; 1e-5 leaves room.

func TestRopeTableEqualsRope(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, hd := range []int{2, 8, 64} {
		tab := newRopeTable(40, hd, 10000)
		for _, pos := range []int{0, 1, 17, 39} {
			a := randVec(rng, hd)
			b := append([]float32(nil), a...)
			rope(a, pos, 10000)
			tab.rotate(b, pos)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("hd %d pos %d elem %d: table %g, rope %g", hd, pos, i, b[i], a[i])
				}
			}
		}
	}
	if tab := newRopeTable(8, 4, 10000); tab.fits(4, 10000, 9) || tab.fits(8, 10000, 4) || tab.fits(4, 500000, 4) || !tab.fits(4, 10000, 8) {
		t.Fatal("fits: a table of 8 positions, hd 4, base 1e4 must fit exactly n ≤ 8 at hd 4, base 1e4")
	}
}

func attnCase(rng *rand.Rand, s attnShape, context int) (qkv []float32, cache *kvCache) {
	kw := s.kvl * s.hd
	row := s.hl*s.hd + 2*kw
	cache = newKVCache(s.seq0+s.seqs, context, kw)
	for i := range cache.k {
		cache.k[i], cache.v[i] = float32(rng.Float64()*2-1), float32(rng.Float64()*2-1)
	}
	return randVec(rng, s.seqs*s.q*row), cache
}

func TestAttentionEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, s := range []attnShape{
		{seq0: 1, seqs: 2, q: 5, past: 3, hl: 8, kvl: 4, hd: 8, theta: 10000},
		{seq0: 0, seqs: 3, q: 1, past: 20, hl: 4, kvl: 4, hd: 16, theta: 500000},
		{seq0: 0, seqs: 1, q: 6, past: 0, hl: 2, kvl: 1, hd: 4},
		{seq0: 0, seqs: 2, q: 4, past: 0, hl: 2, kvl: 2, hd: 4, bidirectional: true},
	} {
		qkv, cache := attnCase(rng, s, s.past+s.q+2)
		qkv2 := append([]float32(nil), qkv...)
		cache2 := &kvCache{k: append([]float32(nil), cache.k...), v: append([]float32(nil), cache.v...), context: cache.context, width: cache.width}
		ao, ao2 := make([]float32, s.seqs*s.q*s.hl*s.hd), make([]float32, s.seqs*s.q*s.hl*s.hd)
		refAttention(qkv, ao, cache, s)
		if s.theta > 0 {
			s.rot = newRopeTable(cache.context, s.hd, s.theta)
		}
		attention(qkv2, ao2, cache2, s)
		for i := range ao {
			if !close32(ao2[i], float64(ao[i]), 2e-5) {
				t.Fatalf("%+v: output %d = %g, reference %g", s, i, ao2[i], ao[i])
			}
		}
		for i := range cache.k {
			if cache.k[i] != cache2.k[i] || cache.v[i] != cache2.v[i] {
				t.Fatalf("%+v: cache element %d differs from the reference", s, i)
			}
		}
	}
}

func TestNormsAndActivationsEqualReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const rows, n = 5, 48
	x, w, b := randVec(rng, rows*n), randVec(rng, n), randVec(rng, n)
	for i := range x {
		x[i] *= 6 // activations over [−6, 6]: both tanh branches, exp far from 1
	}
	got, want := make([]float32, rows*n), make([]float32, rows*n)
	check := func(what string, tol float64) {
		t.Helper()
		for i := range got {
			if !close32(got[i], float64(want[i]), tol) {
				t.Fatalf("%s: element %d = %g, reference %g", what, i, got[i], want[i])
			}
		}
	}
	rmsNorm(x, got, w, rows, 1e-5)
	refRMSNorm(x, want, w, rows, 1e-5)
	check("rmsnorm", 0)
	layerNorm(x, got, w, b, rows, 1e-5)
	refLayerNorm(x, want, w, b, rows, 1e-5)
	check("layernorm", 0)
	activate(x, got[:rows*n/2], rows, n/2, true)
	refActivate(x, want[:rows*n/2], rows, n/2, true)
	check("silu", 1e-6) // expf: ≤ 2 ulp, then a float32 add, divide and multiply: a few ulp ≈ 5e-7
	activate(x, got, rows, n, false)
	refActivate(x, want, rows, n, false)
	check("gelu", 1e-6) // x·σ(2z) in float32 against tanh in float64: a few ulp
}

// The benchmarks time each kernel beside its reference in one run
// (sub-benchmarks "ref" and "fast"): the ratio is the speed-up on the
// machine at hand. Shapes: test/single-tiny (batch 4, prompt 20, hidden 64,
// 8 heads / 4 KV heads of 8, ffn 128) prefill and decode at past 20, and a
// 7B-like layer shard (32 heads of 128, ffn 11008/8) with 4 × 128 tokens.

type attnBench struct {
	name    string
	s       attnShape
	context int
}

var attnBenches = []attnBench{
	{"tiny-prefill", attnShape{seqs: 4, q: 20, hl: 8, kvl: 4, hd: 8, theta: 10000}, 24},
	{"tiny-decode", attnShape{seqs: 4, q: 1, past: 20, hl: 8, kvl: 4, hd: 8, theta: 10000}, 24},
	{"7b-decode-ctx512", attnShape{seqs: 4, q: 1, past: 511, hl: 32, kvl: 32, hd: 128, theta: 10000}, 512},
}

func BenchmarkAttention(b *testing.B) {
	for _, c := range attnBenches {
		rng := rand.New(rand.NewPCG(1, 1))
		qkv, cache := attnCase(rng, c.s, c.context)
		ao := make([]float32, c.s.seqs*c.s.q*c.s.hl*c.s.hd)
		b.Run(c.name+"/ref", func(b *testing.B) {
			for b.Loop() {
				refAttention(qkv, ao, cache, c.s)
			}
		})
		s := c.s
		s.rot = newRopeTable(c.context, s.hd, s.theta)
		b.Run(c.name+"/fast", func(b *testing.B) {
			for b.Loop() {
				attention(qkv, ao, cache, s)
			}
		})
	}
}

func BenchmarkRope(b *testing.B) {
	const hd, pos = 128, 300
	v := make([]float32, hd)
	b.Run("ref", func(b *testing.B) {
		for b.Loop() {
			rope(v, pos, 10000)
		}
	})
	tab := newRopeTable(512, hd, 10000)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			tab.rotate(v, pos)
		}
	})
}

func BenchmarkElementwise(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, sh := range []struct{ rows, width int }{{80, 64}, {4, 64}, {512, 4096}} {
		x, w, bias := randVec(rng, 2*sh.rows*sh.width), randVec(rng, sh.width), randVec(rng, sh.width)
		out := make([]float32, sh.rows*sh.width)
		for _, k := range []struct {
			name      string
			ref, fast func()
		}{
			{"rmsnorm", func() { refRMSNorm(x, out, w, sh.rows, 1e-5) }, func() { rmsNorm(x, out, w, sh.rows, 1e-5) }},
			{"layernorm", func() { refLayerNorm(x, out, w, bias, sh.rows, 1e-5) }, func() { layerNorm(x, out, w, bias, sh.rows, 1e-5) }},
			{"silu", func() { refActivate(x, out, sh.rows, sh.width, true) }, func() { activate(x, out, sh.rows, sh.width, true) }},
			{"gelu", func() { refActivate(x, out, sh.rows, sh.width, false) }, func() { activate(x, out, sh.rows, sh.width, false) }},
		} {
			name := fmt.Sprintf("%s-%dx%d", k.name, sh.rows, sh.width)
			b.Run(name+"/ref", func(b *testing.B) {
				for b.Loop() {
					k.ref()
				}
			})
			b.Run(name+"/fast", func(b *testing.B) {
				for b.Loop() {
					k.fast()
				}
			})
		}
	}
}

// MatMul's gonum tiles give every output the same sum as one whole
// blas32.Gemm call (gonum accumulates along k in order in both), bit for
// bit, at shapes below, at and above the tiles on each side (k = 0
// included: zeros).
func TestMatMulEqualsOneGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, sh := range [][3]int{{1, 1, 1}, {80, 128, 64}, {64, 192, 64}, {65, 193, 7}, {130, 400, 130}, {3, 5, 0}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, b := randVec(rng, m*k), randVec(rng, k*n)
		got, want := randVec(rng, m*n), make([]float32, m*n) // got starts dirty: β = 0 must overwrite it
		if k == 0 {
			MatMul(m, n, k, a, b, got) // the empty sum is MatMul's own, whichever GEMM
		} else {
			matMulGonum(m, n, k, a, b, got)
		}
		if k > 0 { // k = 0: want stays zero
			refGemm(m, n, k, a, b, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%d×%d×%d: element %d = %g, one call %g", m, n, k, i, got[i], want[i])
			}
		}
	}
}

// MatMul, on OpenBLAS where this machine has it, agrees with gonum's
// product within k float32 roundings of the largest partial sum.
func TestMatMulOpenBLASAgreesWithGonum(t *testing.T) {
	desc, err := GEMM()
	if err != nil {
		t.Fatal(err)
	}
	if gemmImpl.lib == nil {
		t.Skipf("MatMul runs %s", desc)
	}
	rng := rand.New(rand.NewPCG(23, 24))
	for _, sh := range [][3]int{{1, 1, 1}, {80, 128, 64}, {65, 193, 7}, {130, 400, 130}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, b := randVec(rng, m*k), randVec(rng, k*n)
		got, want := make([]float32, m*n), make([]float32, m*n)
		MatMul(m, n, k, a, b, got)
		matMulGonum(m, n, k, a, b, want)
		for i := range want {
			var mag float64
			row, col := i/n, i%n
			for p := 0; p < k; p++ {
				mag += math.Abs(float64(a[row*k+p]) * float64(b[p*n+col]))
			}
			if d := math.Abs(float64(got[i]) - float64(want[i])); d > 2*float64(k)*0x1p-24*mag {
				t.Fatalf("%v: element %d: OpenBLAS %g, gonum %g", sh, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkMatMulImpl times MatMul as the backend runs it (OpenBLAS when
// loaded) beside gonum's tiles, on one core's worth of threads.
func BenchmarkMatMulImpl(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, sh := range [][3]int{{80, 128, 64}, {4, 256, 64}, {512, 1024, 1024}} {
		m, n, k := sh[0], sh[1], sh[2]
		x, w, c := randVec(rng, m*k), randVec(rng, k*n), make([]float32, m*n)
		name := fmt.Sprintf("%dx%dx%d", m, n, k)
		b.Run(name+"/matmul", func(b *testing.B) {
			for b.Loop() {
				MatMul(m, n, k, x, w, c)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(name+"/gonum", func(b *testing.B) {
			for b.Loop() {
				matMulGonum(m, n, k, x, w, c)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkGemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, sh := range [][3]int{{80, 128, 64}, {80, 256, 64}, {4, 256, 64}, {512, 1024, 1024}} {
		m, n, k := sh[0], sh[1], sh[2]
		x, w, out := randVec(rng, m*k), randVec(rng, k*n), make([]float32, m*n)
		name := fmt.Sprintf("%dx%dx%d", m, n, k)
		b.Run(name+"/ref", func(b *testing.B) {
			for b.Loop() {
				refGemm(m, n, k, x, w, out)
			}
		})
		b.Run(name+"/fast", func(b *testing.B) {
			for b.Loop() {
				MatMul(m, n, k, x, w, out)
			}
		})
	}
}
