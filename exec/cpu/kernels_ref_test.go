package cpu

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// The kernels as first written (scalar Go, math.Pow and Sincos per rotary
// pair per token, a function call per element): the reference the faster
// kernels are checked against and benchmarked beside.

func refRMSNorm(x, out, w []float32, rows int, eps float64) {
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

func refLayerNorm(x, out, w, b []float32, rows int, eps float64) {
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

func refAttention(qkv, ao []float32, cache *kvCache, s attnShape) {
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
			n := s.past + j + 1
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

func refSilu(x float32) float32 { return float32(float64(x) / (1 + math.Exp(-float64(x)))) }

func refGelu(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+geluCoeff*v*v*v))))
}

func refActivate(u, a []float32, rows, fl int, gated bool) {
	for r := 0; r < rows; r++ {
		ar := a[r*fl : (r+1)*fl]
		if gated {
			g, up := u[r*2*fl:r*2*fl+fl], u[r*2*fl+fl:(r+1)*2*fl]
			for i := range ar {
				ar[i] = refSilu(g[i]) * up[i]
			}
			continue
		}
		ur := u[r*fl : (r+1)*fl]
		for i := range ar {
			ar[i] = refGelu(ur[i])
		}
	}
}

// rope rotates one head's vector at position pos: pair (2i, 2i+1) turns by
// pos·base^(−2i/hd), angles in float64 (what ropeTable holds).
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

// refGemm is the first gemm: one blas32.Gemm call (parallel over 64 × 64
// blocks on goroutines once there are 4 or more).
func refGemm(m, n, k int, a, b, c []float32) {
	if m == 0 {
		return
	}
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas32.General{Rows: m, Cols: k, Stride: k, Data: a[:m*k]},
		blas32.General{Rows: k, Cols: n, Stride: n, Data: b},
		0,
		blas32.General{Rows: m, Cols: n, Stride: n, Data: c[:m*n]})
}
