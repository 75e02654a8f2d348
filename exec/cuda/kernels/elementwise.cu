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

// a[r] from u[r]: silu(gate)·up when gated (u rows are [gate fl | up fl]),
// else the tanh-approximated GELU.
__global__ void pb_act(const elem* u, elem* a, int rows, int fl, int gated) {
	const size_t n = (size_t)rows * fl;
	for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
		const size_t r = k / fl, c = k % fl;
		if (gated) {
			const float g = ld(u[r * 2 * fl + c]), up = ld(u[r * 2 * fl + fl + c]);
			a[k] = st(g / (1.0f + expf(-g)) * up);
		} else {
			const float x = ld(u[k]);
			a[k] = st(0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))));
		}
	}
}

} // extern "C"
