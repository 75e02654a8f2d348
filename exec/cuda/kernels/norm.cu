// Row normalizations: RMSNorm and LayerNorm, one block per row.

#include "pb_common.cuh"

// Where H is a multiple of PB_NORM_VEC (pb_common.cuh), a thread reads
// and writes its elements 16 bytes at a time: thread t takes the vectors
// t, t + blockDim.x, … (PB_NORM_VEC consecutive elements each), and sums
// them in that order, element by element. A decode step has a block per
// sequence and 16 or so elements per thread: one-element iterations are a
// chain of memory round trips (a store may alias the next load), vectors
// are two. fused.cu's kernels walk the row the same way, so their sums
// are these bit for bit.

extern "C" {

// RMSNorm of output row r from input row r·q + q − 1 (q > 1: the last
// position of each sequence after a prefill pass): out = x / √(mean(x²) + ε) · w.
__global__ void pb_rmsnorm(const elem* x, elem* out, const elem* w, int q, int H, float eps) {
	const int r = blockIdx.x;
	const elem* xr = x + ((size_t)r * q + q - 1) * H;
	elem* o = out + (size_t)r * H;
	float ss = 0.0f;
	if (H % PB_NORM_VEC == 0) {
		for (int c = threadIdx.x * PB_NORM_VEC; c < H; c += blockDim.x * PB_NORM_VEC) {
			pb_raw<PB_NORM_VEC> xv;
			pb_fetch<PB_NORM_VEC>(xr + c, xv);
#pragma unroll
			for (int e = 0; e < PB_NORM_VEC; e++) {
				const float v = ld(xv.e[e]);
				ss += v * v;
			}
		}
		ss = block_sum(ss);
		const float inv = 1.0f / sqrtf(ss / (float)H + eps);
		for (int c = threadIdx.x * PB_NORM_VEC; c < H; c += blockDim.x * PB_NORM_VEC) {
			pb_raw<PB_NORM_VEC> xv, wv, ov;
			pb_fetch<PB_NORM_VEC>(xr + c, xv);
			pb_fetch<PB_NORM_VEC>(w + c, wv);
#pragma unroll
			for (int e = 0; e < PB_NORM_VEC; e++) ov.e[e] = st(ld(xv.e[e]) * inv * ld(wv.e[e]));
			pb_store<PB_NORM_VEC>(o + c, ov);
		}
		return;
	}
	for (int c = threadIdx.x; c < H; c += blockDim.x) {
		const float v = ld(xr[c]);
		ss += v * v;
	}
	ss = block_sum(ss);
	const float inv = 1.0f / sqrtf(ss / (float)H + eps);
	for (int c = threadIdx.x; c < H; c += blockDim.x) o[c] = st(ld(xr[c]) * inv * ld(w[c]));
}

// LayerNorm of output row r from input row r·q + q − 1 (as pb_rmsnorm):
// out = (x − μ) / √(σ² + ε) · w + b, with the row's mean μ and biased
// variance σ² (two passes over the row, fp32 sums).
__global__ void pb_layernorm(const elem* x, elem* out, const elem* w, const elem* b, int q, int H, float eps) {
	const int r = blockIdx.x;
	const elem* xr = x + ((size_t)r * q + q - 1) * H;
	elem* o = out + (size_t)r * H;
	float s = 0.0f;
	if (H % PB_NORM_VEC == 0) {
		for (int c = threadIdx.x * PB_NORM_VEC; c < H; c += blockDim.x * PB_NORM_VEC) {
			pb_raw<PB_NORM_VEC> xv;
			pb_fetch<PB_NORM_VEC>(xr + c, xv);
#pragma unroll
			for (int e = 0; e < PB_NORM_VEC; e++) s += ld(xv.e[e]);
		}
		const float mean = block_sum(s) / (float)H;
		float ss = 0.0f;
		for (int c = threadIdx.x * PB_NORM_VEC; c < H; c += blockDim.x * PB_NORM_VEC) {
			pb_raw<PB_NORM_VEC> xv;
			pb_fetch<PB_NORM_VEC>(xr + c, xv);
#pragma unroll
			for (int e = 0; e < PB_NORM_VEC; e++) {
				const float d = ld(xv.e[e]) - mean;
				ss += d * d;
			}
		}
		const float inv = 1.0f / sqrtf(block_sum(ss) / (float)H + eps);
		for (int c = threadIdx.x * PB_NORM_VEC; c < H; c += blockDim.x * PB_NORM_VEC) {
			pb_raw<PB_NORM_VEC> xv, wv, bv, ov;
			pb_fetch<PB_NORM_VEC>(xr + c, xv);
			pb_fetch<PB_NORM_VEC>(w + c, wv);
			pb_fetch<PB_NORM_VEC>(b + c, bv);
#pragma unroll
			for (int e = 0; e < PB_NORM_VEC; e++) ov.e[e] = st((ld(xv.e[e]) - mean) * inv * ld(wv.e[e]) + ld(bv.e[e]));
			pb_store<PB_NORM_VEC>(o + c, ov);
		}
		return;
	}
	for (int c = threadIdx.x; c < H; c += blockDim.x) s += ld(xr[c]);
	const float mean = block_sum(s) / (float)H;
	float ss = 0.0f;
	for (int c = threadIdx.x; c < H; c += blockDim.x) {
		const float d = ld(xr[c]) - mean;
		ss += d * d;
	}
	const float inv = 1.0f / sqrtf(block_sum(ss) / (float)H + eps);
	for (int c = threadIdx.x; c < H; c += blockDim.x) o[c] = st((ld(xr[c]) - mean) * inv * ld(w[c]) + ld(b[c]));
}

} // extern "C"
