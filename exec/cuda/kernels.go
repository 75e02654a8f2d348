package cuda

// kernelSource is the CUDA C++ source of every kernel the backend launches,
// compiled once per process and element type by NVRTC (-DPB_F16, -DPB_BF16
// or -DPB_F32). It includes no header: 16-bit elements are stored as
// unsigned short and converted with PTX cvt instructions (fp16) or bit
// arithmetic (bf16), so it compiles with any NVRTC that has no CUDA headers
// beside it. All arithmetic is fp32; elements are rounded to nearest even
// when stored.
//
// Every kernel that depends on a cache position reads it from a device int
// (pos, one per micro-batch) instead of a parameter, so a captured decode
// step replays at any position: the host sets pos with cuMemsetD32Async
// before launching the graph.
//
// The hash (pb_mix, pb_unit) is exec/cpu's splitmix64 finalizer and its
// top-24-bit map to [−1, 1), ported exactly (hash.go holds the Go mirror the
// tests compare with exec/cpu); the host passes the key prefix
// mix(mix(mix(seed) ^ FNV-1a(tensor)) ^ uint64(−1)).
const kernelSource = `
#if defined(PB_F16)
typedef unsigned short elem;
__device__ __forceinline__ float ld(elem v) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v)); return f; }
__device__ __forceinline__ elem st(float f) { elem h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#define PB_ELEM_BYTES 2
#elif defined(PB_BF16)
typedef unsigned short elem;
__device__ __forceinline__ float ld(elem v) { return __uint_as_float(((unsigned int)v) << 16); }
__device__ __forceinline__ elem st(float f) {
	unsigned int u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (elem)((u >> 16) | 0x40u); // NaN stays a (quiet) NaN
	u += 0x7fffu + ((u >> 16) & 1u);                                       // round to nearest even
	return (elem)(u >> 16);
}
#define PB_ELEM_BYTES 2
#else
typedef float elem;
__device__ __forceinline__ float ld(elem v) { return v; }
__device__ __forceinline__ elem st(float f) { return f; }
#define PB_ELEM_BYTES 4
#endif

typedef unsigned long long u64;

// NVRTC declares the math functions but defines no <math.h> macros.
#define PB_INF __int_as_float(0x7f800000)

// ---- the synthetic model's hash (exec/cpu weights.go) ----

__device__ __forceinline__ u64 pb_mix(u64 z) {
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// [−1, 1) from the top 24 bits; every step is exact in fp32.
__device__ __forceinline__ float pb_unit(u64 h) { return (float)(h >> 40) / 16777216.0f * 2.0f - 1.0f; }

// PromptToken(seed, seq, pos, vocab) given base = the key prefix of "prompt".
__device__ __forceinline__ int pb_prompt_token(u64 base, int seq, int pos, int vocab) {
	return (int)(pb_mix(pb_mix(base ^ (u64)(long long)seq) ^ (u64)(long long)pos) % (u64)vocab);
}

// ---- small helpers ----

__device__ __forceinline__ float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

// block_sum adds v over the block (blockDim.x a multiple of 32, ≤ 1024).
__device__ float block_sum(float v) {
	__shared__ float part[32];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	v = warp_sum(v);
	if (lane == 0) part[warp] = v;
	__syncthreads();
	const int nw = blockDim.x >> 5;
	v = threadIdx.x < nw ? part[threadIdx.x] : 0.0f;
	if (warp == 0) v = warp_sum(v);
	if (threadIdx.x == 0) part[0] = v;
	__syncthreads();
	v = part[0];
	__syncthreads();
	return v;
}

// A token id read from the float32 tokens buffer; invalid ids are reported
// once in err = {row + 1, the token's bits} and read as -1.
__device__ __forceinline__ int pb_token(const float* tokens, int r, int vocab, int* err) {
	const float t = tokens[r];
	const int id = (int)t;
	if ((float)id != t || id < 0 || id >= vocab) {
		if (threadIdx.x == 0 && atomicCAS(err, 0, r + 1) == 0) err[1] = __float_as_int(t);
		return -1;
	}
	return id;
}

extern "C" {

// Prompt tokens of the pass: rows [seq][j] at positions *pos + j, when the
// pass lies in the prompt (later passes read what sample fed back).
__global__ void pb_prompt_tokens(float* tokens, const int* pos, int seqs, int q, int seq0, int prompt, int vocab, u64 base) {
	const int p0 = *pos;
	if (p0 >= prompt) return;
	for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < seqs * q; r += gridDim.x * blockDim.x) {
		tokens[r] = (float)pb_prompt_token(base, seq0 + r / q, p0 + r % q, vocab);
	}
}

// Vocabulary-sharded embedding: row r of x is row (id − vstart) of this
// rank's shard, or zeros when the id is another rank's (the all-reduce
// after it sums the shards). One block per row.
__global__ void pb_embed(const float* tokens, elem* x, const elem* emb, int H, int vstart, int vl, int vocab, int* err) {
	const int r = blockIdx.x;
	const int id = pb_token(tokens, r, vocab, err);
	const int local = id - vstart;
	elem* xr = x + (size_t)r * H;
	if (id >= 0 && local >= 0 && local < vl) {
		const elem* er = emb + (size_t)local * H;
		for (int c = threadIdx.x; c < H; c += blockDim.x) xr[c] = er[c];
	} else {
		for (int c = threadIdx.x; c < H; c += blockDim.x) xr[c] = st(0.0f);
	}
}

// Inputs of a model without embeddings: x[r][c] = u(seed, −1, "synthetic", id, c).
__global__ void pb_synthetic(const float* tokens, elem* x, int H, int vocab, u64 base, int* err) {
	const int r = blockIdx.x;
	const int id = pb_token(tokens, r, vocab, err);
	elem* xr = x + (size_t)r * H;
	const u64 h = pb_mix(base ^ (u64)(long long)(id < 0 ? 0 : id));
	for (int c = threadIdx.x; c < H; c += blockDim.x) {
		xr[c] = st(id < 0 ? 0.0f : pb_unit(pb_mix(h ^ (u64)(long long)c)));
	}
}

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

// Rotary embeddings on the q and k heads of each row of qkv (in place; row
// [seq][j] is at position *pos + j), then k and v appended to the cache
// ([seq][pos][kvl·hd]). Pair (2i, 2i+1) turns by pos·base^(−2i/hd), the
// angle in fp64 as on the CPU; base 0 rotates nothing (learned positions).
// One block per row.
__global__ void pb_rope_kv(elem* qkv, elem* kc, elem* vc, const int* pos, int seq0, int q, int hl, int kvl, int hd, int context, float base) {
	const int r = blockIdx.x;
	const int i = r / q, j = r % q;
	const int p = *pos + j;
	const int half = hd / 2;
	elem* row = qkv + (size_t)r * (hl + 2 * kvl) * hd;
	const int nq = hl * half, nk = kvl * half;
	for (int t = threadIdx.x; base > 0.0f && t < nq + nk; t += blockDim.x) {
		const int head = t / half, pi = t % half; // heads 0..hl−1 are q, hl.. are k (contiguous in the row)
		elem* v = row + head * hd + 2 * pi;
		const double theta = (double)p * pow((double)base, -(double)(2 * pi) / (double)hd);
		double sd, cd;
		sincos(theta, &sd, &cd);
		const float s = (float)sd, c = (float)cd;
		const float x0 = ld(v[0]), x1 = ld(v[1]);
		v[0] = st(x0 * c - x1 * s);
		v[1] = st(x0 * s + x1 * c);
	}
	__syncthreads();
	const int kvw = kvl * hd;
	const size_t at = ((size_t)(seq0 + i) * context + p) * kvw;
	for (int e = threadIdx.x; e < kvw; e += blockDim.x) {
		kc[at + e] = row[hl * hd + e];
		vc[at + e] = row[hl * hd + kvw + e];
	}
}

} // extern "C"

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
	// whole warp); a lane whose key is past n only shuffles.
	for (int t0 = warp * G; t0 < n; t0 += NG) {
		const int t = t0 + g;
		const bool valid = t < n;
		float kv[V], vv[V], s = 0.0f;
		if (valid) {
			loadv<V>(kc + base + (size_t)t * kvw, kv);
			loadv<V>(vc + base + (size_t)t * kvw, vv); // both loads in flight before the reduction
#pragma unroll
			for (int e = 0; e < V; e++) s += qv[e] * kv[e];
		}
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
	__global__ void __launch_bounds__(ATTN_THREADS) pb_attention_v##V(const elem* qkv, elem* ao, const elem* kc, \
		const elem* vc, const int* pos, int seq0, int q, int hl, int kvl, int hd, int context, float scale,        \
		int bidir) {                                                                                           \
		attention<V>(qkv, ao, kc, vc, pos, seq0, q, hl, kvl, hd, context, scale, bidir);                           \
	}
PB_ATTENTION(1)
PB_ATTENTION(2)
PB_ATTENTION(4)
PB_ATTENTION(8)

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

// out[i] = x[i·q + q − 1]: the last position of each sequence.
__global__ void pb_last_rows(const elem* x, elem* out, int q, int H) {
	const int i = blockIdx.x;
	const elem* src = x + ((size_t)i * q + q - 1) * H;
	for (int c = threadIdx.x; c < H; c += blockDim.x) out[(size_t)i * H + c] = src[c];
}

// Teacher forcing: the token fed to the next pass of sequence seq0 + i is
// the prompt schedule's token at the position after this pass (*pos + qlen).
__global__ void pb_teacher(float* tokens, const int* pos, int qlen, int seqs, int seq0, int vocab, u64 base) {
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < seqs) tokens[i] = (float)pb_prompt_token(base, seq0 + i, *pos + qlen, vocab);
}

// Argmax over the real vocabulary of sequence i (one block each), reading
// logits in the gathered layout [T][seqs][vl]: id v is at
// ((v / vl)·seqs + i)·vl + v % vl. The first index wins ties; NaN never
// wins; out is −1 when nothing compares (as exec/cpu's Argmax).
__global__ void pb_argmax(const elem* logits, int* out, int seqs, int vl, int vocab) {
	const int i = blockIdx.x;
	float bv = -PB_INF;
	int best = -1;
	for (int v = threadIdx.x; v < vocab; v += blockDim.x) {
		const float x = ld(logits[((size_t)(v / vl) * seqs + i) * vl + v % vl]);
		if (x > bv || (best < 0 && x == bv)) {
			bv = x;
			best = v;
		}
	}
	__shared__ float sv[1024];
	__shared__ int si[1024];
	sv[threadIdx.x] = bv;
	si[threadIdx.x] = best;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) {
			const float ov = sv[threadIdx.x + s];
			const int oi = si[threadIdx.x + s];
			const int mi = si[threadIdx.x];
			const float mv = sv[threadIdx.x];
			// The other side wins when it has an index and ours has none, a
			// larger value, or an equal value at a smaller index.
			if (oi >= 0 && (mi < 0 || ov > mv || (ov == mv && oi < mi))) {
				sv[threadIdx.x] = ov;
				si[threadIdx.x] = oi;
			}
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) out[i] = si[0];
}

} // extern "C"
`

// kernelNames are the functions the backend looks up.
var kernelNames = []string{
	"pb_prompt_tokens", "pb_embed", "pb_synthetic", "pb_rmsnorm", "pb_layernorm", "pb_bias", "pb_pos_add", "pb_rope_kv",
	"pb_attention_v1", "pb_attention_v2", "pb_attention_v4", "pb_attention_v8",
	"pb_add", "pb_act", "pb_last_rows", "pb_teacher", "pb_argmax",
}

// Launch shapes.
const (
	attnThreads   = 256 // ATTN_THREADS
	rowThreads    = 256 // rmsnorm, layernorm, embed, pos_add, rope_kv, last_rows: one block per row
	argmaxThreads = 1024
	flatThreads   = 256 // grid-stride kernels
	maxFlatBlocks = 4096
)

// attentionVec picks the elements per lane V of the attention kernel for
// head_dim hd and elements of elemBytes: hd/V lanes hold one key, which
// must be a power of two of at most 32. It prefers the V whose V elements
// are one 16-byte load (8 for fp16/bf16, 4 for fp32), then the widest; 0
// means no variant fits (for example head_dim 96 or 512).
func attentionVec(hd, elemBytes int) int {
	fits := func(v int) bool {
		l := hd / v
		return hd%v == 0 && l >= 1 && l <= 32 && l&(l-1) == 0
	}
	if v := 16 / elemBytes; fits(v) {
		return v
	}
	for _, v := range []int{8, 4, 2, 1} {
		if fits(v) {
			return v
		}
	}
	return 0
}
