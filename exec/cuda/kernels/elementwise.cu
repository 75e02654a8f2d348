// Element-wise kernels: bias, learned positions, residual add, activation.

#include "pb_common.cuh"

extern "C" {

// out[r][c] += bias[c] for rows rows of n (a linear's bias after its GEMM).
__global__ void pb_bias(elem* out, const elem* bias, int rows, int n) {
	const size_t total = (size_t)rows * n;
	for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += (size_t)gridDim.x * blockDim.x) {
		out[k] = st(ld(out[k]) + ld(bias[k % n]));
	}
}

// Learned positions: row r = [seq][j] of x gains row *pos + j of the
// position embedding pe [max_positions][H]. One block per row.
__global__ void pb_pos_add(elem* x, const elem* pe, const int* pos, int q, int H) {
	const int r = blockIdx.x;
	const int p = *pos + r % q;
	elem* xr = x + (size_t)r * H;
	const elem* pr = pe + (size_t)p * H;
	for (int c = threadIdx.x; c < H; c += blockDim.x) xr[c] = st(ld(xr[c]) + ld(pr[c]));
}

// x += y.
__global__ void pb_add(elem* x, const elem* y, int n) {
	for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
		x[k] = st(ld(x[k]) + ld(y[k]));
	}
}

// One activation: silu(g)·up when gated, else the tanh-approximated GELU of g.
__device__ __forceinline__ float pb_act1(float g, float up, int gated) {
	if (gated) return g / (1.0f + expf(-g)) * up;
	return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g)));
}

// Elements per 16 bytes: pb_act's vector width.
#define ACT_VEC (16 / PB_ELEM_BYTES)

// a[r] from u[r]: silu(gate)·up when gated (u rows are [gate fl | up fl]),
// else the tanh-approximated GELU. Where fl is a multiple of ACT_VEC
// (every segment then starts 16-byte aligned), each thread reads and
// writes ACT_VEC elements with 16-byte accesses and divides once per
// vector; else one element at a time. The arithmetic per element is the
// same either way.
__global__ void pb_act(const elem* u, elem* a, int rows, int fl, int gated) {
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	if (fl % ACT_VEC == 0) {
		const size_t nv = (size_t)rows * fl / ACT_VEC;
		for (size_t kv = (size_t)blockIdx.x * blockDim.x + threadIdx.x; kv < nv; kv += stride) {
			const size_t k = kv * ACT_VEC, r = k / fl, c = k % fl;
			pb_raw<ACT_VEC> x, y, o;
			pb_fetch<ACT_VEC>(gated ? u + r * 2 * fl + c : u + k, x);
			if (gated) pb_fetch<ACT_VEC>(u + r * 2 * fl + fl + c, y);
#pragma unroll
			for (int e = 0; e < ACT_VEC; e++) o.e[e] = st(pb_act1(ld(x.e[e]), gated ? ld(y.e[e]) : 0.0f, gated));
			pb_store<ACT_VEC>(a + k, o);
		}
		return;
	}
	const size_t n = (size_t)rows * fl;
	for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
		const size_t r = k / fl, c = k % fl;
		a[k] = gated ? st(pb_act1(ld(u[r * 2 * fl + c]), ld(u[r * 2 * fl + fl + c]), 1)) : st(pb_act1(ld(u[k]), 0.0f, 0));
	}
}

} // extern "C"
