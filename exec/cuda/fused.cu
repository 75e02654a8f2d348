// Fused row kernels; fusedmodel.go is their Go model. Compiled by NVRTC per
// element type (-DPB_F16, -DPB_BF16 or -DPB_F32), fp32 arithmetic, for any
// architecture, in one module with splitkv.cu and gen.cu; the element type
// and its conversions are pb_common.cuh's.
//
//   pb_add_rmsnorm, pb_add_layernorm: the residual add x += y and the next
//     norm of x in one pass over the row (one read of x and y, one write of
//     x and of the norm's output) instead of two kernels and a re-read.
//   pb_rope_kv_table: rotary embeddings from an fp32 table of cos and sin
//     per (position, pair), computed once on the host, instead of pow and
//     sincos in fp64 per element and step; then k and v appended to the
//     cache, as pb_rope_kv.

#include "pb_common.cuh"

extern "C" {

// x[r] += y[r] (stored in the element type), then out[r] = x / √(mean(x²) + ε)
// · w over the stored x. One block per row of H.
__global__ void pb_add_rmsnorm(elem* x, const elem* y, elem* out, const elem* w, int H, float eps) {
	const size_t r = blockIdx.x;
	elem* xr = x + r * H;
	const elem* yr = y + r * H;
	elem* o = out + r * H;
	float ss = 0.0f;
	if (H % PB_NORM_VEC == 0) { // norm.cu's walk: vectors t, t + blockDim.x, …
		for (int c = threadIdx.x * PB_NORM_VEC; c < H; c += blockDim.x * PB_NORM_VEC) {
			pb_raw<PB_NORM_VEC> xv, yv;
			pb_fetch<PB_NORM_VEC>(xr + c, xv);
			pb_fetch<PB_NORM_VEC>(yr + c, yv);
#pragma unroll
			for (int e = 0; e < PB_NORM_VEC; e++) {
				const elem s = st(ld(xv.e[e]) + ld(yv.e[e]));
				xv.e[e] = s;
				const float v = ld(s);
				ss += v * v;
			}
			pb_store<PB_NORM_VEC>(xr + c, xv);
		}
		const float inv = 1.0f / sqrtf(block_sum(ss) / (float)H + eps);
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
		const elem s = st(ld(xr[c]) + ld(yr[c]));
		xr[c] = s;
		const float v = ld(s);
		ss += v * v;
	}
	const float inv = 1.0f / sqrtf(block_sum(ss) / (float)H + eps);
	for (int c = threadIdx.x; c < H; c += blockDim.x) o[c] = st(ld(xr[c]) * inv * ld(w[c]));
}

// x[r] += y[r], then out[r] = (x − μ) / √(σ² + ε) · w + b with the row's
// mean and biased variance (two passes, fp32 sums).
__global__ void pb_add_layernorm(elem* x, const elem* y, elem* out, const elem* w, const elem* b, int H, float eps) {
	const size_t r = blockIdx.x;
	elem* xr = x + r * H;
	const elem* yr = y + r * H;
	elem* o = out + r * H;
	float s = 0.0f;
	if (H % PB_NORM_VEC == 0) { // norm.cu's walk: vectors t, t + blockDim.x, …
		for (int c = threadIdx.x * PB_NORM_VEC; c < H; c += blockDim.x * PB_NORM_VEC) {
			pb_raw<PB_NORM_VEC> xv, yv;
			pb_fetch<PB_NORM_VEC>(xr + c, xv);
			pb_fetch<PB_NORM_VEC>(yr + c, yv);
#pragma unroll
			for (int e = 0; e < PB_NORM_VEC; e++) {
				xv.e[e] = st(ld(xv.e[e]) + ld(yv.e[e]));
				s += ld(xv.e[e]);
			}
			pb_store<PB_NORM_VEC>(xr + c, xv);
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
	for (int c = threadIdx.x; c < H; c += blockDim.x) {
		const elem e = st(ld(xr[c]) + ld(yr[c]));
		xr[c] = e;
		s += ld(e);
	}
	const float mean = block_sum(s) / (float)H;
	float ss = 0.0f;
	for (int c = threadIdx.x; c < H; c += blockDim.x) {
		const float d = ld(xr[c]) - mean;
		ss += d * d;
	}
	const float inv = 1.0f / sqrtf(block_sum(ss) / (float)H + eps);
	for (int c = threadIdx.x; c < H; c += blockDim.x) o[c] = st((ld(xr[c]) - mean) * inv * ld(w[c]) + ld(b[c]));
}

// pb_rope_kv with the angles from table: float2 (cos, sin) of
// pos·base^(−2i/hd) at [pos][i], i < hd/2 (ropeTable in fusedmodel.go).
// Each product is rounded before the sum (__fmul_rn: never contracted into
// a fused multiply-add),
// so the rotation is bit-identical to the Go model's. Row r's work is
// (hl + kvl)·hd/2 + kvl·hd items: a q pair rotated in place, a k pair
// rotated and stored both in the row and in the cache, a v element copied
// to the cache; blocks (r, y) take items y·blockDim.x + t,
// striding by blockDim.x·gridDim.y, so a decode step of a few rows spreads
// over gridDim.y blocks per row instead of one block walking the row.
__global__ void pb_rope_kv_table(elem* qkv, elem* kc, elem* vc, const float2* table, const int* pos, int seq0, int q, int hl, int kvl,
	int hd, int context) {
	const int r = blockIdx.x;
	const int i = r / q, j = r % q;
	const int p = *pos + j;
	const int half = hd / 2;
	elem* row = qkv + (size_t)r * (hl + 2 * kvl) * hd;
	const int nq = hl * half, nk = kvl * half, kvw = kvl * hd;
	const size_t at = ((size_t)(seq0 + i) * context + p) * kvw;
	const int items = nq + nk + kvw;
	for (int t = blockIdx.y * blockDim.x + threadIdx.x; t < items; t += blockDim.x * gridDim.y) {
		if (t < nq + nk) {
			const int head = t / half, pi = t % half; // heads 0..hl−1 are q, hl.. are k (contiguous in the row)
			elem* v = row + head * hd + 2 * pi;
			elem y0 = v[0], y1 = v[1];
			if (table != 0) {
				const float2 cs = table[(size_t)p * half + pi];
				const float x0 = ld(y0), x1 = ld(y1);
				y0 = st(__fmul_rn(x0, cs.x) - __fmul_rn(x1, cs.y));
				y1 = st(__fmul_rn(x0, cs.y) + __fmul_rn(x1, cs.x));
				v[0] = y0;
				v[1] = y1;
			}
			if (head >= hl) {
				const int e = (head - hl) * hd + 2 * pi;
				kc[at + e] = y0;
				kc[at + e + 1] = y1;
			}
		} else {
			const int e = t - nq - nk; // the v elements, one item each
			vc[at + e] = row[hl * hd + kvw + e];
		}
	}
}

} // extern "C"
