// Split-KV decode attention (flash-decoding); splitkvmodel.go is its Go
// model. Compiled by NVRTC per element type (-DPB_F16, -DPB_BF16 or
// -DPB_F32, fp32 arithmetic throughout), for any architecture.
//
// A decode step of a small batch has few (row, head) pairs: one block per
// pair leaves most SMs idle while each block walks the whole cache. Here
// the keys of each row are cut into S splits (grid z; the host picks S
// from the SM count so about 768 threads per SM run: splitKVCount): block (r, h, k)
// computes, over keys [k·chunk, min((k+1)·chunk, n)), the max m of the
// base-2 scores, the sum l = Σ 2^(x − m) and the unnormalized
// accumulator a = Σ 2^(x − m)·v, and writes them in fp32 to a workspace
// [r][h][k][2 + hd]; pb_splitkv_merge then writes
// Σ a_k·2^(m_k − M) / Σ l_k·2^(m_k − M), M = max m_k, rounded once.
// pb_splitkv_vV does both in one launch: the last block of each (r, h)
// to finish merges (one launch per decode attention instead of two).
// chunk = ⌈(*pos + q) / S⌉ is computed on the device, so a captured decode
// step replays at any position. Within a block the keys are spread as in
// pb_attention_vV: hd/V lanes per key (one 16-byte load each), 128/L key
// groups of online softmax, merged through shared memory.

#include "pb_common.cuh"

#define SPLITKV_THREADS 128
// Six blocks per SM (768 threads, what splitKVCount plans for; at most 80
// registers per thread).
#define SPLITKV_MIN_BLOCKS 6

// V consecutive elements as floats (the query: read once per block).
template <int V> __device__ __forceinline__ void splitkv_load(const elem* p, float* f) {
#pragma unroll
	for (int e = 0; e < V; e++) f[e] = ld(p[e]);
}

template <int V>
__device__ void splitkv_partial(const elem* qkv, const elem* kc, const elem* vc, const int* pos, float* ws,
	int seq0, int q, int hl, int kvl, int hd, int context, float scale_log2, int bidir) {
	const int r = blockIdx.x, h = blockIdx.y, k = blockIdx.z, S = gridDim.z;
	const int i = r / q, j = r % q;
	const int ncall = *pos + q;
	const int n = bidir ? ncall : *pos + j + 1;
	const int chunk = (ncall + S - 1) / S;
	const int lo = k * chunk, hi = lo + chunk < n ? lo + chunk : n;
	const int kvh = h / (hl / kvl);
	const int L = hd / V, G = 32 / L;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane / L, gl = lane % L;
	const int NG = (SPLITKV_THREADS / 32) * G;
	const int gid = warp * G + g;

	float qv[V];
	splitkv_load<V>(qkv + (size_t)r * (hl + 2 * kvl) * hd + h * hd + gl * V, qv);
	const size_t kvw = (size_t)kvl * hd;
	const size_t base = (size_t)(seq0 + i) * context * kvw + (size_t)kvh * hd + gl * V;

	float m = -PB_INF, l = 0.0f, acc[V];
#pragma unroll
	for (int e = 0; e < V; e++) acc[e] = 0.0f;
	// As pb_attention_vV: the key and value NG positions ahead are fetched
	// raw (16-byte loads where V elements make 16 bytes) before this one's
	// arithmetic, two iterations' loads in flight.
	pb_raw<V> kr, vr;
	if (lo + warp * G + g < hi) {
		pb_fetch<V>(kc + base + (size_t)(lo + warp * G + g) * kvw, kr);
		pb_fetch<V>(vc + base + (size_t)(lo + warp * G + g) * kvw, vr);
	}
	for (int t0 = lo + warp * G; t0 < hi; t0 += NG) {
		const int t = t0 + g;
		const bool valid = t < hi;
		pb_raw<V> kn, vn;
		if (t + NG < hi) {
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
			const float x = s * scale_log2;
			const float mn = fmaxf(m, x);
			const float corr = exp2f(m - mn), p = exp2f(x - mn);
			l = l * corr + p;
#pragma unroll
			for (int e = 0; e < V; e++) acc[e] = acc[e] * corr + p * vv[e];
			m = mn;
		}
	}

	__shared__ float sm[SPLITKV_THREADS], sl[SPLITKV_THREADS];
	__shared__ float sacc[SPLITKV_THREADS * 8];
	if (gl == 0) {
		sm[gid] = m;
		sl[gid] = l;
	}
#pragma unroll
	for (int e = 0; e < V; e++) sacc[gid * hd + gl * V + e] = acc[e];
	__syncthreads();
	float M = -PB_INF;
	for (int c = 0; c < NG; c++) M = fmaxf(M, sm[c]);
	float* out = ws + ((size_t)(r * hl + h) * S + k) * (2 + hd);
	if (threadIdx.x == 0) {
		float den = 0.0f;
		for (int c = 0; c < NG; c++) {
			if (sl[c] > 0.0f) den += sl[c] * exp2f(sm[c] - M);
		}
		out[0] = M; // −∞ with den 0 when the split has no keys
		out[1] = den;
	}
	for (int d = threadIdx.x; d < hd; d += SPLITKV_THREADS) {
		float num = 0.0f;
		for (int c = 0; c < NG; c++) {
			if (sl[c] > 0.0f) num += sacc[c * hd + d] * exp2f(sm[c] - M);
		}
		out[2 + d] = num;
	}
}

// splitkv_merge_pair writes ao[r][h] from the S partials of (r, h) at p:
// Σ a_k·2^(m_k − M) / Σ l_k·2^(m_k − M), M = max m_k, rounded once. The
// reads are volatile: in pb_splitkv_vV other blocks wrote the partials,
// and this SM's L1 must not answer for them.
__device__ void splitkv_merge_pair(const volatile float* p, elem* ao, int r, int h, int hl, int hd, int S) {
	float M = -PB_INF;
	for (int k = 0; k < S; k++) M = fmaxf(M, p[k * (2 + hd)]);
	float L = 0.0f;
	for (int k = 0; k < S; k++) {
		const float l = p[k * (2 + hd) + 1];
		if (l > 0.0f) L += l * exp2f(p[k * (2 + hd)] - M);
	}
	const float inv = 1.0f / L;
	elem* out = ao + ((size_t)r * hl + h) * hd;
	for (int d = threadIdx.x; d < hd; d += SPLITKV_THREADS) {
		float acc = 0.0f;
		for (int k = 0; k < S; k++) {
			const volatile float* pk = p + k * (2 + hd);
			if (pk[1] > 0.0f) acc += pk[2 + d] * exp2f(pk[0] - M);
		}
		out[d] = st(acc * inv);
	}
}

// splitkv_last_merges runs after a block's partial in pb_splitkv_vV: the
// last of the S blocks of (r, h) to finish, counted in count[r·hl + h],
// merges the S partials into ao and sets the count back to 0, so the
// next launch (a captured decode step replays) starts from 0. The fence
// before the count makes this block's partial visible to the block that
// merges (the threadFenceReduction pattern of the CUDA samples).
__device__ void splitkv_last_merges(const float* ws, elem* ao, int* count, int hl, int hd) {
	const int r = blockIdx.x, h = blockIdx.y, S = gridDim.z;
	__shared__ int last;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0) last = atomicAdd(count + r * hl + h, 1) == S - 1;
	__syncthreads();
	if (!last) return;
	__threadfence();
	splitkv_merge_pair((const volatile float*)ws + (size_t)(r * hl + h) * S * (2 + hd), ao, r, h, hl, hd, S);
	if (threadIdx.x == 0) count[r * hl + h] = 0;
}

extern "C" {

#define PB_SPLITKV(V)                                                                                            \
	__global__ void __launch_bounds__(SPLITKV_THREADS, SPLITKV_MIN_BLOCKS) pb_splitkv_partial_v##V(const elem* qkv, const elem* kc,   \
		const elem* vc, const int* pos, float* ws, int seq0, int q, int hl, int kvl, int hd, int context,         \
		float scale_log2, int bidir) {                                                                            \
		splitkv_partial<V>(qkv, kc, vc, pos, ws, seq0, q, hl, kvl, hd, context, scale_log2, bidir);                \
	}
PB_SPLITKV(1)
PB_SPLITKV(2)
PB_SPLITKV(4)
PB_SPLITKV(8)

// ao[r][h] from the S partials of (r, h): one block per (row, head).
__global__ void __launch_bounds__(SPLITKV_THREADS) pb_splitkv_merge(const float* ws, elem* ao, int hl, int hd, int S) {
	const int r = blockIdx.x, h = blockIdx.y;
	splitkv_merge_pair(ws + (size_t)(r * hl + h) * S * (2 + hd), ao, r, h, hl, hd, S);
}

// pb_splitkv_partial_vV and pb_splitkv_merge in one launch: each block
// writes its partial, and the last block of each (row, head) merges them
// (count: one int per pair, 0 between launches).
#define PB_SPLITKV1(V)                                                                                               \
	__global__ void __launch_bounds__(SPLITKV_THREADS, SPLITKV_MIN_BLOCKS) pb_splitkv_v##V(const elem* qkv, const elem* kc, const elem* vc, \
		const int* pos, float* ws, elem* ao, int* count, int seq0, int q, int hl, int kvl, int hd, int context,        \
		float scale_log2, int bidir) {                                                                                 \
		splitkv_partial<V>(qkv, kc, vc, pos, ws, seq0, q, hl, kvl, hd, context, scale_log2, bidir);                     \
		splitkv_last_merges(ws, ao, count, hl, hd);                                                                    \
	}
PB_SPLITKV1(1)
PB_SPLITKV1(2)
PB_SPLITKV1(4)
PB_SPLITKV1(8)

} // extern "C"
