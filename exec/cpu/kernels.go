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

// gemm computes out[rows, n] = x[rows, k] @ w[k, n].
func gemm(x []float32, w *model.Tensor, out []float32, rows int) {
	if rows == 0 {
		return
	}
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas32.General{Rows: rows, Cols: w.K, Stride: w.K, Data: x[:rows*w.K]},
		blas32.General{Rows: w.K, Cols: w.N, Stride: w.N, Data: w.Data},
		0,
		blas32.General{Rows: rows, Cols: w.N, Stride: w.N, Data: out[:rows*w.N]})
}

// rope rotates one head's vector at position pos: pair (2i, 2i+1) turns by
// pos·base^(−2i/hd). Angles are computed in float64.
func rope(v []float32, pos int, base float64) {
	hd := len(v)
	for i := 0; i < hd/2; i++ {
		theta := float64(pos) * math.Pow(base, -float64(2*i)/float64(hd))
		sin, cos := math.Sincos(theta)
		c, s := float32(cos), float32(sin)
		x0, x1 := v[2*i], v[2*i+1]
		v[2*i] = x0*c - x1*s
		v[2*i+1] = x0*s + x1*c
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
}

// attention applies rotary embeddings to the q and k parts of qkv (rows
// [seq][pos], each [q hl·hd | k kvl·hd | v kvl·hd]), appends k and v to the
// cache at [past, past+q), and writes to ao ([seq][pos][hl·hd]) causal
// attention of each query over cache positions [0, past+i]. Query head h
// reads kv head h / (hl/kvl). Softmax subtracts the max; sums are float32.
func attention(qkv, ao []float32, cache *kvCache, s attnShape) {
	qw, kw := s.hl*s.hd, s.kvl*s.hd
	row := qw + 2*kw
	group := s.hl / s.kvl
	scale := float32(1 / math.Sqrt(float64(s.hd)))
	scores := make([]float32, s.past+s.q)
	for i := 0; i < s.seqs; i++ {
		seq := s.seq0 + i
		for j := 0; j < s.q; j++ {
			pos := s.past + j
			r := qkv[(i*s.q+j)*row : (i*s.q+j+1)*row]
			k, v := r[qw:qw+kw], r[qw+kw:]
			if s.theta > 0 {
				for h := 0; h < s.hl; h++ {
					rope(r[h*s.hd:(h+1)*s.hd], pos, s.theta)
				}
				for h := 0; h < s.kvl; h++ {
					rope(k[h*s.hd:(h+1)*s.hd], pos, s.theta)
				}
			}
			copy(cache.at(cache.k, seq, pos), k)
			copy(cache.at(cache.v, seq, pos), v)
		}
		for j := 0; j < s.q; j++ {
			n := s.past + j + 1 // positions 0..past+j
			if s.bidirectional {
				n = s.past + s.q
			}
			r := qkv[(i*s.q+j)*row:]
			out := ao[(i*s.q+j)*qw : (i*s.q+j+1)*qw]
			for h := 0; h < s.hl; h++ {
				qh := r[h*s.hd : (h+1)*s.hd]
				kvh := h / group
				mx := float32(math.Inf(-1))
				for t := 0; t < n; t++ {
					kt := cache.at(cache.k, seq, t)[kvh*s.hd : (kvh+1)*s.hd]
					var d float32
					for e, qe := range qh {
						d += qe * kt[e]
					}
					d *= scale
					scores[t] = d
					if d > mx {
						mx = d
					}
				}
				var sum float32
				for t := 0; t < n; t++ {
					p := float32(math.Exp(float64(scores[t] - mx)))
					scores[t] = p
					sum += p
				}
				oh := out[h*s.hd : (h+1)*s.hd]
				clear(oh)
				for t := 0; t < n; t++ {
					vt := cache.at(cache.v, seq, t)[kvh*s.hd : (kvh+1)*s.hd]
					p := scores[t]
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

// silu is x·σ(x).
func silu(x float32) float32 { return float32(float64(x) / (1 + math.Exp(-float64(x)))) }

// gelu is the tanh approximation 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).
func gelu(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+geluCoeff*v*v*v))))
}

// activate writes a[r] from u[r]: silu(gate)·up when gated (u rows are
// [gate fl | up fl]), else gelu(u).
func activate(u, a []float32, rows, fl int, gated bool) {
	for r := 0; r < rows; r++ {
		ar := a[r*fl : (r+1)*fl]
		if gated {
			g, up := u[r*2*fl:r*2*fl+fl], u[r*2*fl+fl:(r+1)*2*fl]
			for i := range ar {
				ar[i] = silu(g[i]) * up[i]
			}
			continue
		}
		ur := u[r*fl : (r+1)*fl]
		for i := range ar {
			ar[i] = gelu(ur[i])
		}
	}
}
