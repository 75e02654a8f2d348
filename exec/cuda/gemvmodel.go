package cuda

import "math/big"

// gemvModel is pb_gemv_mMM's arithmetic in its order (gemv.cu): for each
// output column, each split s of chunk rows and each k-lane l, the fp32
// fused multiply-adds of the rows of the groups l, l + 32, … of the split
// in order; then the warp's 4 k-lanes as (k0 + k1) + (k2 + k3) (the
// shuffles xor 8, then 16); then the 8 warps in order from 0; unsplit,
// that sum rounded by round; split, the S partials added in order from 0,
// then rounded. x is [m][k] and w [k][n], already in the element type's
// values. The host-emulation harness holds the kernel to it bit for bit.
func gemvModel(x, w []float32, m, k, n, chunk int, round func(float32) float32) []float32 {
	out := make([]float32, m*n)
	s := (k + chunk - 1) / chunk
	for r := 0; r < m; r++ {
		for c := 0; c < n; c++ {
			var total float32
			for sp := 0; sp < s; sp++ {
				lo := sp * chunk
				ng := (min(lo+chunk, k) - lo) / 8
				var lanes [gemvKLanes]float32
				for l := range lanes {
					var acc float32
					for g := l; g < ng; g += gemvKLanes {
						for q := 0; q < 8; q++ {
							row := lo + g*8 + q
							acc = fma32(x[r*k+row], w[row*n+c], acc)
						}
					}
					lanes[l] = acc
				}
				var v float32
				for wp := 0; wp < gemvKLanes/4; wp++ {
					q := lanes[4*wp : 4*wp+4]
					v += (q[0] + q[1]) + (q[2] + q[3])
				}
				if s == 1 {
					total = v
				} else {
					total += v
				}
			}
			out[r*n+c] = round(total)
		}
	}
	return out
}

// fma32 is a·b + c rounded once to float32 (fmaf, __fmaf_rn). a·b is
// exact in float64; where the float64 sum is exact too (TwoSum's error
// is 0) rounding it is the one rounding, else the sum is rounded from an
// exact big.Float.
func fma32(a, b, c float32) float32 {
	p, q := float64(a)*float64(b), float64(c)
	s := p + q
	bb := s - p
	if (p-(s-bb))+(q-bb) == 0 {
		return float32(s)
	}
	e := new(big.Float).SetPrec(256).SetFloat64(p)
	e.Add(e, new(big.Float).SetPrec(256).SetFloat64(q))
	f, _ := e.Float32()
	return f
}
