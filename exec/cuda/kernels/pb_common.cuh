// pb_common.cuh — what every partbench kernel file includes first: the
// element type and its conversions, the synthetic model's hash and the
// block/warp reductions.
//
// The element type is chosen by one define: -DPB_F16, -DPB_BF16 or -DPB_F32
// (the default). 16-bit elements are stored as unsigned short and converted
// with PTX cvt instructions (fp16) or bit arithmetic (bf16), so the kernels
// compile with an NVRTC that has no CUDA headers beside it. All arithmetic
// is fp32; elements are rounded to nearest even when stored.
//
// Compiled by NVRTC for the device, and by g++ for the host-emulation
// harness (exec/cuda/hostemu, -DPB_HOSTEMU behind its prelude), which gives
// the same rounding in plain C++.
#ifndef PB_COMMON_CUH
#define PB_COMMON_CUH

#if defined(PB_F16)
typedef unsigned short elem;
#if defined(PB_HOSTEMU)
__device__ __forceinline__ float ld(elem v) { return pb_emu_f16_to_f32(v); }
__device__ __forceinline__ elem st(float f) { return pb_emu_f32_to_f16(f); }
#else
__device__ __forceinline__ float ld(elem v) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v)); return f; }
__device__ __forceinline__ elem st(float f) { elem h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#endif
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

#if PB_ELEM_BYTES == 2
// pb_pack2 is two elements in one 32-bit register, lo in the low half (the
// layout of mma.sync and ldmatrix fragments), each rounded to nearest even.
__device__ __forceinline__ unsigned int pb_pack2(float lo, float hi) {
	return (unsigned int)st(lo) | ((unsigned int)st(hi) << 16);
}
__device__ __forceinline__ float pb_lo(unsigned int v) { return ld((elem)(v & 0xffffu)); }
__device__ __forceinline__ float pb_hi(unsigned int v) { return ld((elem)(v >> 16)); }
#endif

typedef unsigned long long u64;

// ---- V elements as raw bits, fetched ahead of their use ----
//
// pb_raw<V> holds V consecutive elements as loaded, unconverted: a kernel
// that fetches the next key while it computes on the current one keeps
// the load in flight until the values are first used (a conversion right
// after the load would wait for the data there). Where V elements are a
// multiple of 16 bytes the fetch is 16-byte vector loads (the caller's
// address is aligned to them), else one load per element.
template <int V> union pb_raw {
	elem e[V];
	uint4 q[(V * PB_ELEM_BYTES + 15) / 16];
};
template <int V, bool VEC = (V * PB_ELEM_BYTES) % 16 == 0> struct pb_fetcher {
	static __device__ __forceinline__ void fetch(const elem* p, pb_raw<V>& r) {
#pragma unroll
		for (int k = 0; k < V * PB_ELEM_BYTES / 16; k++) r.q[k] = reinterpret_cast<const uint4*>(p)[k];
	}
};
template <int V> struct pb_fetcher<V, false> {
	static __device__ __forceinline__ void fetch(const elem* p, pb_raw<V>& r) {
#pragma unroll
		for (int e = 0; e < V; e++) r.e[e] = p[e];
	}
};
template <int V> __device__ __forceinline__ void pb_fetch(const elem* p, pb_raw<V>& r) { pb_fetcher<V>::fetch(p, r); }
template <int V, bool VEC = (V * PB_ELEM_BYTES) % 16 == 0> struct pb_storer {
	static __device__ __forceinline__ void store(elem* p, const pb_raw<V>& r) {
#pragma unroll
		for (int k = 0; k < V * PB_ELEM_BYTES / 16; k++) reinterpret_cast<uint4*>(p)[k] = r.q[k];
	}
};
template <int V> struct pb_storer<V, false> {
	static __device__ __forceinline__ void store(elem* p, const pb_raw<V>& r) {
#pragma unroll
		for (int e = 0; e < V; e++) p[e] = r.e[e];
	}
};
// pb_store writes r's V elements to p (16-byte stores where they make 16
// bytes, p aligned to them).
template <int V> __device__ __forceinline__ void pb_store(elem* p, const pb_raw<V>& r) { pb_storer<V>::store(p, r); }
// Elements per 16 bytes: the norms' vector width (norm.cu, fused.cu).
#define PB_NORM_VEC (16 / PB_ELEM_BYTES)
// pb_unpack converts r's elements to fp32.
template <int V> __device__ __forceinline__ void pb_unpack(const pb_raw<V>& r, float* f) {
#pragma unroll
	for (int e = 0; e < V; e++) f[e] = ld(r.e[e]);
}

// NVRTC declares the math functions but defines no <math.h> macros.
#define PB_INF __int_as_float(0x7f800000)

// ---- the synthetic model's hash (exec/cpu weights.go) ----
//
// pb_mix and pb_unit are exec/cpu's splitmix64 finalizer and its
// top-24-bit map to [−1, 1), ported exactly (exec/cuda/hash.go holds the Go
// mirror the tests compare with exec/cpu); the host passes the key prefix
// mix(mix(mix(seed) ^ FNV-1a(tensor)) ^ uint64(−1)).

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

// ---- reductions ----

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

#endif // PB_COMMON_CUH
