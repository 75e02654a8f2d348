// Prefill attention through cuBLAS (attnblas.go): S = scale·Q·Kᵀ and
// O = P·V as strided-batched GEMMs over the KV heads, and between them
// pb_causal_softmax, which turns each row of fp32 scores into the
// probabilities P in the element type (rounded before P·V, as the flash
// kernel rounds P). Compiled by NVRTC per element type in the second
// module, for any architecture.

#include "pb_common.cuh"

// attnblas_max is the largest v over the block (blockDim.x a multiple of
// 32, ≤ 1024).
__device__ float attnblas_max(float v) {
	__shared__ float part[32];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	if (lane == 0) part[warp] = v;
	__syncthreads();
	const int nw = blockDim.x >> 5;
	v = threadIdx.x < nw ? part[threadIdx.x] : -PB_INF;
	if (warp == 0) {
		for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	}
	if (threadIdx.x == 0) part[0] = v;
	__syncthreads();
	v = part[0];
	__syncthreads();
	return v;
}

extern "C" {

// P[b][i][·] from S[b][i][·] (rows of n, scores already scaled): query i
// of the pass sits at position *pos + i and sees keys [0, *pos + i]
// (causal), or all n with bidir; P = exp(s − max) / Σ exp(s − max) over
// the keys it sees, 0 beyond, rounded to the element type. One block per
// (query i, batch b): grid (q, batches).
__global__ void pb_causal_softmax(const float* S, elem* P, const int* pos, int n, int bidir) {
	const int i = blockIdx.x, q = gridDim.x;
	const size_t row = ((size_t)blockIdx.y * q + i) * n;
	const float* s = S + row;
	elem* p = P + row;
	const int seen = bidir ? n : min(n, *pos + i + 1);
	float m = -PB_INF;
	for (int j = threadIdx.x; j < seen; j += blockDim.x) m = fmaxf(m, s[j]);
	m = attnblas_max(m);
	float l = 0.0f;
	for (int j = threadIdx.x; j < seen; j += blockDim.x) l += expf(s[j] - m);
	const float inv = 1.0f / block_sum(l);
	for (int j = threadIdx.x; j < n; j += blockDim.x) p[j] = st(j < seen ? expf(s[j] - m) * inv : 0.0f);
}

} // extern "C"
