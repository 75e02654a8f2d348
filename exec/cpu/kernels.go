package cpu

import (
	"math"

	"github.com/partbench/partbench/model"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// geluCoeff is the cubic term of the tanh approximation of GELU.
const geluCoeff = 0.044715

// rmsNorm writes out[r] = x[r] / √(mean(x[r]²) + ε) · w for each row of
// width len(w). The mean is accumulated in float64.
func rmsNorm(x, out, w []float32, rows int, eps float64) {
	n := len(w)
	for r := 0; r < rows; r++ {
		xr, or := x[r*n:(r+1)*n], out[r*n:(r+1)*n]
		or, w := or[:len(xr)], w[:len(xr)]
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		inv := float32(1 / math.Sqrt(ss/float64(n)+eps))
		for i, v := range xr {
			or[i] = v * inv * w[i]
		}
	}
}

// layerNorm writes out[r] = (x[r] − μ) / √(σ² + ε) · w + b for each row of
// width len(w), with the row's mean μ and (biased) variance σ² accumulated
// in float64, as torch.nn.LayerNorm defines them.
func layerNorm(x, out, w, b []float32, rows int, eps float64) {
	n := len(w)
	for r := 0; r < rows; r++ {
		xr, or := x[r*n:(r+1)*n], out[r*n:(r+1)*n]
		or, w, b := or[:len(xr)], w[:len(xr)], b[:len(xr)]
		var sum float64
		for _, v := range xr {
			sum += float64(v)
		}
		mean := sum / float64(n)
		var ss float64
		for _, v := range xr {
			d := float64(v) - mean
			ss += d * d
		}
		inv := 1 / math.Sqrt(ss/float64(n)+eps)
		for i, v := range xr {
			or[i] = float32((float64(v)-mean)*inv)*w[i] + b[i]
		}
	}
}

// addBias adds the row vector b to each of rows rows of out.
func addBias(out, b []float32, rows int) {
	n := len(b)
	for r := 0; r < rows; r++ {
		or := out[r*n : (r+1)*n]
		for i, v := range b {
			or[i] += v
		}
	}
}

// gemm computes out[rows, n] = x[rows, k] @ w[k, n] (MatMul).
func gemm(x []float32, w *model.Tensor, out []float32, rows int) {
	MatMul(rows, w.N, w.K, x, w.Data, out)
}

// Tiles of MatMul: gonum's sgemm splits a product into 64 × 64 blocks and
// computes them on goroutines once there are 4 or more; a tile of at most
// 64 rows × 192 columns has at most 3, so gonum computes it serially.
const (
	matMulTileRows = 64
	matMulTileCols = 192
)

// MatMul computes c[m, n] = a[m, k] @ b[k, n] (row-major, no transposes)
// through gonum's sgemm, one tile of at most 64 × 192 outputs at a time, so
// every product runs serially on the calling goroutine: a rank is one
// device, and on a host where ranks share the cores, a product fanned out
// over goroutines waits for cores other ranks hold (and its timing with
// them). Each output is the same sum in the same order as one whole call
// (gonum accumulates along k in order either way). calib times GEMMs
// through this function.
//
// With OpenBLAS loaded (GEMM, PARTBENCH_BLAS) the whole product is one
// cblas_sgemm on the library's threads per rank (1 by default) instead:
// sums then follow OpenBLAS's blocking, equal to gonum's within float32
// rounding, not bit for bit.
func MatMul(m, n, k int, a, b, c []float32) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 { // an empty sum
		clear(c[:m*n])
		return
	}
	gemmImpl.once.Do(chooseGEMM)
	if lib := gemmImpl.lib; lib != nil {
		lib.Sgemm(m, n, k, a[:m*k], b[:k*n], c[:m*n])
		return
	}
	matMulGonum(m, n, k, a, b, c)
}

// matMulGonum is MatMul on gonum's sgemm in serial tiles.
func matMulGonum(m, n, k int, a, b, c []float32) {
	for i := 0; i < m; i += matMulTileRows {
		mi := min(matMulTileRows, m-i)
		for j := 0; j < n; j += matMulTileCols {
			nj := min(matMulTileCols, n-j)
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
				blas32.General{Rows: mi, Cols: k, Stride: k, Data: a[i*k : (i+mi)*k]},
				blas32.General{Rows: k, Cols: nj, Stride: n, Data: b[j : (k-1)*n+j+nj]},
				0,
				blas32.General{Rows: mi, Cols: nj, Stride: n, Data: c[i*n+j : (i+mi-1)*n+j+nj]})
		}
	}
}

// ropeTable holds cos and sin of every rotary angle pos·base^(−2i/hd) for
// positions [0, positions) and pairs i < hd/2, computed in float64 and
// rounded to float32: built once per run (Compute keeps one), so attention
// rotates with two loads per pair instead of math.Pow and math.Sincos.
type ropeTable struct {
	hd       int
	base     float64
	cos, sin []float32 // [pos][hd/2]
}

func newRopeTable(positions, hd int, base float64) *ropeTable {
	half := hd / 2
	t := &ropeTable{hd: hd, base: base, cos: make([]float32, positions*half), sin: make([]float32, positions*half)}
	inv := make([]float64, half)
	for i := range inv {
		inv[i] = math.Pow(base, -float64(2*i)/float64(hd))
	}
	for p := 0; p < positions; p++ {
		c, s := t.cos[p*half:(p+1)*half], t.sin[p*half:(p+1)*half]
		for i, f := range inv {
			sin, cos := math.Sincos(float64(p) * f)
			c[i], s[i] = float32(cos), float32(sin)
		}
	}
	return t
}

// fits reports whether t holds head dim hd, base and positions [0, n).
func (t *ropeTable) fits(hd int, base float64, n int) bool {
	return t != nil && t.hd == hd && t.base == base && (hd < 2 || len(t.cos) >= n*(hd/2))
}

// rotate turns one head's vector at position pos: pair (2i, 2i+1) by the
// angle pos·base^(−2i/hd).
func (t *ropeTable) rotate(v []float32, pos int) {
	half := t.hd / 2
	c, s := t.cos[pos*half:(pos+1)*half], t.sin[pos*half:(pos+1)*half]
	s = s[:len(c)]
	v = v[:2*len(c)]
	for i, ci := range c {
		si := s[i]
		x0, x1 := v[2*i], v[2*i+1]
		v[2*i] = x0*ci - x1*si
		v[2*i+1] = x0*si + x1*ci
	}
}

// kvCache is one layer's cache on one rank: keys and values of every
// sequence of the batch at every position, [seq][pos][kvl·hd].
type kvCache struct {
	k, v    []float32
	context int
	width   int // kvl·hd
}

func newKVCache(batch, context, width int) *kvCache {
	return &kvCache{k: make([]float32, batch*context*width), v: make([]float32, batch*context*width), context: context, width: width}
}

func (c *kvCache) at(buf []float32, seq, pos int) []float32 {
	o := (seq*c.context + pos) * c.width
	return buf[o : o+c.width]
}

// attnShape is one attention call: seqs sequences (the first is global
// sequence seq0) of q new tokens after past cached ones, hl query heads and
// kvl kv heads of hd on this rank.
type attnShape struct {
	seq0, seqs, q, past int
	hl, kvl, hd         int
	theta               float64 // rotary base (0: no rotary embeddings)
	bidirectional       bool    // every query sees all past+q positions
	// rot is the run's rotary table (nil or too short: one is built for
	// this call).
	rot *ropeTable
}

// attention applies rotary embeddings to the q and k parts of qkv (rows
// [seq][pos], each [q hl·hd | k kvl·hd | v kvl·hd]), appends k and v to the
// cache at [past, past+q), and writes to ao ([seq][pos][hl·hd]) causal
// attention of each query over cache positions [0, past+i]. Query head h
// reads kv head h / (hl/kvl). Softmax subtracts the max; sums are float32
// (q·k in four partial sums, dot32; the rest in position order), with the
// cache's rows sliced once per sequence and inner loops free of bounds
// checks.
func attention(qkv, ao []float32, cache *kvCache, s attnShape) {
	hd := s.hd
	qw, kw := s.hl*hd, s.kvl*hd
	row := qw + 2*kw
	group := s.hl / s.kvl
	scale := float32(1 / math.Sqrt(float64(hd)))
	rot := s.rot
	if s.theta > 0 && !rot.fits(hd, s.theta, s.past+s.q) {
		rot = newRopeTable(s.past+s.q, hd, s.theta)
	}
	scores := make([]float32, s.past+s.q)
	W := cache.width
	span := cache.context * W
	for i := 0; i < s.seqs; i++ {
		seq := s.seq0 + i
		ks, vs := cache.k[seq*span:(seq+1)*span], cache.v[seq*span:(seq+1)*span]
		for j := 0; j < s.q; j++ {
			pos := s.past + j
			r := qkv[(i*s.q+j)*row : (i*s.q+j+1)*row]
			k, v := r[qw:qw+kw], r[qw+kw:]
			if s.theta > 0 {
				for h := 0; h < s.hl; h++ {
					rot.rotate(r[h*hd:(h+1)*hd], pos)
				}
				for h := 0; h < s.kvl; h++ {
					rot.rotate(k[h*hd:(h+1)*hd], pos)
				}
			}
			copy(ks[pos*W:(pos+1)*W], k)
			copy(vs[pos*W:(pos+1)*W], v)
		}
		for j := 0; j < s.q; j++ {
			n := s.past + j + 1 // positions 0..past+j
			if s.bidirectional {
				n = s.past + s.q
			}
			sc := scores[:n]
			r := qkv[(i*s.q+j)*row:]
			out := ao[(i*s.q+j)*qw : (i*s.q+j+1)*qw]
			for h := 0; h < s.hl; h++ {
				qh := r[h*hd : (h+1)*hd]
				off := (h / group) * hd
				mx := float32(math.Inf(-1))
				for t := range sc {
					d := dot32(qh, ks[t*W+off:t*W+off+hd]) * scale
					sc[t] = d
					if d > mx {
						mx = d
					}
				}
				var sum float32
				for t, d := range sc {
					sc[t] = d - mx
				}
				expfSlice(sc)
				for _, p := range sc {
					sum += p
				}
				oh := out[h*hd : (h+1)*hd]
				clear(oh)
				for t, p := range sc {
					vt := vs[t*W+off : t*W+off+hd]
					vt = vt[:len(oh)]
					for e := range oh {
						oh[e] += p * vt[e]
					}
				}
				inv := 1 / sum
				for e := range oh {
					oh[e] *= inv
				}
			}
		}
	}
}

// dot32 is Σ a[i]·b[i] over len(a) in float32 with four partial sums
// (elements i ≡ 0, 1, 2, 3 mod 4, added pairwise at the end): independent
// chains the CPU overlaps, where one running sum waits on each add.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += a4[0] * b4[0]
		s1 += a4[1] * b4[1]
		s2 += a4[2] * b4[2]
		s3 += a4[3] * b4[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// silu is x·σ(x), in float32 (expf).
func silu(x float32) float32 { return x / (1 + expf(-x)) }

// gelu is the tanh approximation 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))),
// computed as x·σ(2z) with z = √(2/π)(x + 0.044715x³) (the same function:
// 0.5(1 + tanh z) = 1/(1 + e^(−2z))), in float32 with expf.
func gelu(x float32) float32 {
	z := sqrt2OverPi * (x + geluCoeff*x*x*x)
	return x / (1 + expf(-2*z))
}

// sqrt2OverPi is √(2/π), GELU's tanh scale.
const sqrt2OverPi = 0.7978845608028654

// activate writes a[r] from u[r]: silu(gate)·up when gated (u rows are
// [gate fl | up fl]), else gelu(u) — the same arithmetic as silu and gelu,
// in loops over whole rows with bounds checks hoisted and e^x of a row in
// one expfSlice call.
func activate(u, a []float32, rows, fl int, gated bool) {
	for r := 0; r < rows; r++ {
		ar := a[r*fl : (r+1)*fl]
		if gated {
			g, up := u[r*2*fl:r*2*fl+fl], u[r*2*fl+fl:(r+1)*2*fl]
			g, up = g[:len(ar)], up[:len(ar)]
			for i, x := range g {
				ar[i] = -x
			}
			expfSlice(ar) // e^(−gate)
			for i, e := range ar {
				ar[i] = g[i] / (1 + e) * up[i] // silu(gate)·up
			}
			continue
		}
		ur := u[r*fl : (r+1)*fl]
		ur = ur[:len(ar)]
		for i, x := range ur {
			ar[i] = -2 * sqrt2OverPi * (x + geluCoeff*x*x*x)
		}
		expfSlice(ar) // e^(−2z)
		for i, e := range ar {
			ar[i] = ur[i] / (1 + e) // gelu(x) = x·σ(2z)
		}
	}
}
