// Attention of the pass's queries over the KV cache (decode and prefill),
// one block per (row, query head).

#include "pb_common.cuh"

// ---- attention over the KV cache ----

// loadv reads V consecutive elements as floats; V·sizeof(elem) = 16 bytes
// is one vector load (the host picks V so every address is aligned).
template <int V> __device__ __forceinline__ void loadv(const elem* p, float* f) {
#pragma unroll
	for (int e = 0; e < V; e++) f[e] = ld(p[e]);
}
#if PB_ELEM_BYTES == 2
template <> __device__ __forceinline__ void loadv<8>(const elem* p, float* f) {
	const uint4 u = *reinterpret_cast<const uint4*>(p);
	const unsigned int w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
	for (int e = 0; e < 4; e++) {
		f[2 * e] = ld((elem)(w[e] & 0xffffu));
		f[2 * e + 1] = ld((elem)(w[e] >> 16));
	}
}
#else
template <> __device__ __forceinline__ void loadv<4>(const elem* p, float* f) {
	const float4 u = *reinterpret_cast<const float4*>(p);
	f[0] = u.x; f[1] = u.y; f[2] = u.z; f[3] = u.w;
}
#endif

#define ATTN_THREADS 256
// Four blocks per SM in the 16-bit types (at most 64 registers per
// thread, which they fit without a spill): a seed decode step at batch 16
// is 16 · 32 = 512 blocks, which four per SM on 132 SMs hold in one wave;
// three would leave a second wave of 116 blocks. fp32 at V = 8 (head dim
// 256) needs 70–80 registers and would spill at 64: three blocks there.
#if PB_ELEM_BYTES == 2
#define ATTN_MIN_BLOCKS 4
#else
#define ATTN_MIN_BLOCKS 3
#endif

// One block per (row r = [seq][j], query head h) (rows on the grid's x,
// which has no 65535 limit); query j of the pass sits
// at position *pos + j and attends to cache positions [0, *pos + j]
// (causal; a decode step has j = 0 and reads the whole cache), or with
// bidir to every position of the pass, [0, *pos + q). Query head h
// reads kv head h / (hl/kvl). L = hd/V lanes hold one key (V elements
// each, one vector load); a warp holds 32/L keys at a time and the block
// 256/L, each key group keeping an online softmax (running max m, sum l,
// weighted values acc), merged at the end. Scores are (q·k)·scale as on
// the CPU; all sums fp32.
template <int V>
__device__ void attention(const elem* qkv, elem* ao, const elem* kc, const elem* vc, const int* pos,
	int seq0, int q, int hl, int kvl, int hd, int context, float scale, int bidir) {
	const int r = blockIdx.x, h = blockIdx.y;
	const int i = r / q, j = r % q;
	const int n = bidir ? *pos + q : *pos + j + 1;
	const int kvh = h / (hl / kvl);
	const int L = hd / V;
	const int G = 32 / L;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane / L, gl = lane % L;
	const int NG = (ATTN_THREADS / 32) * G;
	const int gid = warp * G + g;

	float qv[V];
	loadv<V>(qkv + (size_t)r * (hl + 2 * kvl) * hd + h * hd + gl * V, qv);
	const size_t kvw = (size_t)kvl * hd;
	const size_t base = (size_t)(seq0 + i) * context * kvw + (size_t)kvh * hd + gl * V;

	float m = -PB_INF, l = 0.0f, acc[V];
#pragma unroll
	for (int e = 0; e < V; e++) acc[e] = 0.0f;
	// Every lane of a warp runs the same iterations (the shuffles need the
	// whole warp); a lane whose key is past n only shuffles. The key and
	// value NG positions ahead are fetched (raw, unconverted) before this
	// one's arithmetic, so two iterations' loads are in flight at a time
	// (a decode step is bound by the cache's bytes: the loads in flight
	// per SM, not the arithmetic, set its speed).
	pb_raw<V> kr, vr;
	if (warp * G + g < n) {
		pb_fetch<V>(kc + base + (size_t)(warp * G + g) * kvw, kr);
		pb_fetch<V>(vc + base + (size_t)(warp * G + g) * kvw, vr);
	}
	for (int t0 = warp * G; t0 < n; t0 += NG) {
		const int t = t0 + g;
		const bool valid = t < n;
		pb_raw<V> kn, vn;
		if (t + NG < n) {
			pb_fetch<V>(kc + base + (size_t)(t + NG) * kvw, kn);
			pb_fetch<V>(vc + base + (size_t)(t + NG) * kvw, vn);
		}
		float kv[V], vv[V], s = 0.0f;
		if (valid) {
			pb_unpack<V>(kr, kv);
			pb_unpack<V>(vr, vv);
#pragma unroll
			for (int e = 0; e < V; e++) s += qv[e] * kv[e];
		}
		kr = kn;
		vr = vn;
		for (int o = L / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
		if (valid) {
			s *= scale;
			const float mn = fmaxf(m, s);
			const float corr = expf(m - mn), p = expf(s - mn);
			l = l * corr + p;
#pragma unroll
			for (int e = 0; e < V; e++) acc[e] = acc[e] * corr + p * vv[e];
			m = mn;
		}
	}

	__shared__ float sm[ATTN_THREADS], sl[ATTN_THREADS];
	__shared__ float sacc[ATTN_THREADS * 8];
	if (gl == 0) {
		sm[gid] = m;
		sl[gid] = l;
	}
#pragma unroll
	for (int e = 0; e < V; e++) sacc[gid * hd + gl * V + e] = acc[e];
	__syncthreads();
	float M = -PB_INF;
	for (int k = 0; k < NG; k++) M = fmaxf(M, sm[k]);
	float den = 0.0f;
	for (int k = 0; k < NG; k++) den += sl[k] * expf(sm[k] - M); // groups without keys: l = 0, exp(−inf) = 0
	elem* out = ao + (size_t)r * hl * hd + (size_t)h * hd;
	for (int d = threadIdx.x; d < hd; d += ATTN_THREADS) {
		float num = 0.0f;
		for (int k = 0; k < NG; k++) {
			if (sl[k] > 0.0f) num += sacc[k * hd + d] * expf(sm[k] - M);
		}
		out[d] = st(num / den);
	}
}

extern "C" {

#define PB_ATTENTION(V)                                                                                        \
	__global__ void __launch_bounds__(ATTN_THREADS, ATTN_MIN_BLOCKS) pb_attention_v##V(const elem* qkv, elem* ao, const elem* kc, \
		const elem* vc, const int* pos, int seq0, int q, int hl, int kvl, int hd, int context, float scale,        \
		int bidir) {                                                                                           \
		attention<V>(qkv, ao, kc, vc, pos, seq0, q, hl, kvl, hd, context, scale, bidir);                           \
	}
PB_ATTENTION(1)
PB_ATTENTION(2)
PB_ATTENTION(4)
PB_ATTENTION(8)

} // extern "C"
