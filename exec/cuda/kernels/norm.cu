// Row normalizations: RMSNorm and LayerNorm, one block per row.

#include "pb_common.cuh"

extern "C" {

// RMSNorm of output row r from input row r·q + q − 1 (q > 1: the last
// position of each sequence after a prefill pass): out = x / √(mean(x²) + ε) · w.
__global__ void pb_rmsnorm(const elem* x, elem* out, const elem* w, int q, int H, float eps) {
	const int r = blockIdx.x;
	const elem* xr = x + ((size_t)r * q + q - 1) * H;
	float ss = 0.0f;
	for (int c = threadIdx.x; c < H; c += blockDim.x) {
		const float v = ld(xr[c]);
		ss += v * v;
	}
	ss = block_sum(ss);
	const float inv = 1.0f / sqrtf(ss / (float)H + eps);
	elem* o = out + (size_t)r * H;
	for (int c = threadIdx.x; c < H; c += blockDim.x) o[c] = st(ld(xr[c]) * inv * ld(w[c]));
}

// LayerNorm of output row r from input row r·q + q − 1 (as pb_rmsnorm):
// out = (x − μ) / √(σ² + ε) · w + b, with the row's mean μ and biased
// variance σ² (two passes over the row, fp32 sums).
__global__ void pb_layernorm(const elem* x, elem* out, const elem* w, const elem* b, int q, int H, float eps) {
	const int r = blockIdx.x;
	const elem* xr = x + ((size_t)r * q + q - 1) * H;
	float s = 0.0f;
	for (int c = threadIdx.x; c < H; c += blockDim.x) s += ld(xr[c]);
	const float mean = block_sum(s) / (float)H;
	float ss = 0.0f;
	for (int c = threadIdx.x; c < H; c += blockDim.x) {
		const float d = ld(xr[c]) - mean;
		ss += d * d;
	}
	const float inv = 1.0f / sqrtf(block_sum(ss) / (float)H + eps);
	elem* o = out + (size_t)r * H;
	for (int c = threadIdx.x; c < H; c += blockDim.x) o[c] = st((ld(xr[c]) - mean) * inv * ld(w[c]) + ld(b[c]));
}

} // extern "C"
