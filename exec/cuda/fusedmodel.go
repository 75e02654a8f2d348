package cuda

import "math"

// Go models of fused.cu's kernels: the same rounding points (the residual
// sum stored in the element type before the norm reads it; products of
// the rotation rounded before their difference), sums in float64 where
// the kernels sum in fp32 across the block (the tests bound the gap).

// ropeTable is pb_rope_kv_table's table for positions [0, context) and
// head dim hd: (cos, sin) of pos·base^(−2i/hd) for i < hd/2, interleaved,
// computed in float64 and rounded to fp32 exactly as exec/cpu's rope
// computes its angles.
func ropeTable(context, hd int, base float64) []float32 {
	half := hd / 2
	t := make([]float32, 2*context*half)
	for p := 0; p < context; p++ {
		for i := 0; i < half; i++ {
			theta := float64(p) * math.Pow(base, -float64(2*i)/float64(hd))
			sin, cos := math.Sincos(theta)
			t[2*(p*half+i)], t[2*(p*half+i)+1] = float32(cos), float32(sin)
		}
	}
	return t
}

// ropeTableModel rotates one head's vector v (len hd) at position pos with
// table, each product rounded to fp32 before the sum, as the kernel's
// __fmul_rn/__fsub_rn do. Storing the result in the element type is the
// caller's.
func ropeTableModel(v []float32, pos int, table []float32) {
	half := len(v) / 2
	for i := 0; i < half; i++ {
		c, s := table[2*(pos*half+i)], table[2*(pos*half+i)+1]
		x0, x1 := v[2*i], v[2*i+1]
		v[2*i] = float32(x0*c) - float32(x1*s)
		v[2*i+1] = float32(x0*s) + float32(x1*c)
	}
}

// addNormModel is pb_add_rmsnorm (b nil) or pb_add_layernorm over rows
// rows of width len(w): x += y stored rounded, then the norm of the stored
// x written rounded to out.
func addNormModel(x, y, out, w, b []float32, rows int, eps float64, round func(float32) float32) {
	n := len(w)
	for r := 0; r < rows; r++ {
		xr, yr, or := x[r*n:(r+1)*n], y[r*n:(r+1)*n], out[r*n:(r+1)*n]
		for i := range xr {
			xr[i] = round(xr[i] + yr[i])
		}
		if b == nil {
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			inv := float32(1 / math.Sqrt(ss/float64(n)+eps))
			for i, v := range xr {
				or[i] = round(v * inv * w[i])
			}
			continue
		}
		var s float64
		for _, v := range xr {
			s += float64(v)
		}
		mean := float32(s / float64(n))
		var ss float64
		for _, v := range xr {
			d := float64(v - mean)
			ss += d * d
		}
		inv := float32(1 / math.Sqrt(ss/float64(n)+eps))
		for i, v := range xr {
			or[i] = round((v-mean)*inv*w[i] + b[i])
		}
	}
}
