// Small-M GEMV for decode: out[M][N] = x[M][K] · w[K][N] for 1 ≤ M ≤ 8,
// weights row-major [K][N] (the layout cuBLAS reads NN), fp32
// accumulation, the output rounded once to the element type. Compiled by
// NVRTC per element type (-DPB_F16, -DPB_BF16 or -DPB_F32) in the backend's
// second module; gemv.go plans and launches it, docs/gpu.md gives the
// arithmetic.
//
// A decode GEMM reads K·N weights once and does M·K·N multiply-adds on
// them: at M ≤ 8 it is bound by the bytes of the weights, and what sets
// its speed is the 16-byte loads in flight per SM. So:
//
//   - A block is 256 threads: 8 column threads × 32 k-lanes. Column thread
//     c owns the 8 consecutive output columns n0 + 8c (one 16-byte vector
//     of a weight row in a 16-bit type), so a block covers a tile of 64
//     columns; a warp reads 4 rows × 128 contiguous bytes per load.
//   - Grid (N/64 tiles, S K-splits): split s covers rows
//     [s·chunk, min((s+1)·chunk, K)), chunk a multiple of 8 chosen by the
//     host from the SM count (gemvPlanFor). Within a split, k-lane l takes
//     the groups of 8 consecutive rows l, l + 32, …; for each group it
//     issues the 8 weight-row loads (16 bytes each, streamed:
//     ld.global.nc with L1::no_allocate) before any arithmetic, GEMV_UNROLL
//     groups at once, then multiplies them by x, which the block staged in
//     shared memory as fp32 [row][m] for its split.
//   - The 32 k-lanes' sums of each column are reduced in a fixed order:
//     shuffles over the 4 k-lanes of a warp (xor 8, then 16), then the 8
//     warps in order through shared memory. With S = 1 the block rounds
//     and stores the output. Otherwise it writes its fp32 partial to
//     ws[s][m][n], and the last block of the tile to finish (counted in
//     count[tile], as pb_splitkv_vV does) adds the S partials in order
//     s = 0, 1, …, rounds once and stores, and sets the count back to 0
//     so the next launch (a captured decode step replays) starts from 0.
//     No float atomics: the result is the same bits on every run.
//
// Requirements (gemv.go checks them, else cuBLAS runs the GEMM): K and N
// multiples of 8, w 16-byte aligned, chunk a multiple of 8 with
// (chunk/8)·GEMV_GROUP_FLOATS(MM) ≤ GEMV_XS floats.

#include "pb_common.cuh"

#define GEMV_THREADS 256
#define GEMV_CT 8                           // column threads per block
#define GEMV_KL (GEMV_THREADS / GEMV_CT)    // k-lanes per block: 32
#define GEMV_TILE_N (GEMV_CT * 8)           // columns per block: 64
#define GEMV_XS 4096                        // fp32 of staged x per block, 16 KiB
#define GEMV_GROUP_FLOATS(MM) (8 * (MM) + 4) // staged x per group of 8 rows (4 of padding)
#define GEMV_UNROLL(MM) ((MM) <= 2 ? 2 : 1) // groups of 8 rows in flight per thread
#if PB_ELEM_BYTES == 2
#define GEMV_MIN_BLOCKS 2 // two blocks per SM: at most 128 registers per thread
#else
#define GEMV_MIN_BLOCKS 1 // fp32 (tests): 32-byte row segments, twice the registers
#endif

// gemv_fetch loads the 8 elements of a weight row segment at p (16-byte
// aligned): 16-byte loads through the non-coherent path, not kept in L1
// (each weight is read once per launch), with a 256-byte L2 prefetch on
// sm_80 and later.
__device__ __forceinline__ void gemv_fetch(const elem* p, pb_raw<8>& r) {
#pragma unroll
	for (int k = 0; k < 8 * PB_ELEM_BYTES / 16; k++) {
		const uint4* q = reinterpret_cast<const uint4*>(p) + k;
#if defined(PB_HOSTEMU)
		r.q[k] = *q;
#elif __CUDA_ARCH__ >= 800
		asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
			: "=r"(r.q[k].x), "=r"(r.q[k].y), "=r"(r.q[k].z), "=r"(r.q[k].w)
			: "l"(q));
#else
		asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.q[k].x), "=r"(r.q[k].y), "=r"(r.q[k].z), "=r"(r.q[k].w) : "l"(q));
#endif
	}
}

// gemv_fetch_groups issues the loads of the U groups g, g + GEMV_KL, …
// of rows (each 8 rows of the thread's 8 columns at n0) that lie below ng.
template <int U>
__device__ __forceinline__ void gemv_fetch_groups(const elem* w, int lo, int N, int n0, int g, int ng, pb_raw<8> (&wr)[U][8]) {
#pragma unroll
	for (int u = 0; u < U; u++) {
		const int gg = g + u * GEMV_KL;
		if (gg < ng) {
			const elem* p = w + (size_t)(lo + gg * 8) * N + n0;
#pragma unroll
			for (int r = 0; r < 8; r++) gemv_fetch(p + (size_t)r * N, wr[u][r]);
		}
	}
}

template <int MM>
__device__ __forceinline__ void gemv(const elem* x, const elem* w, float* ws, elem* out, int* count, int M, int K, int N, int chunk) {
	const int tile = blockIdx.x, s = blockIdx.y, S = gridDim.y;
	const int ct = threadIdx.x % GEMV_CT, kl = threadIdx.x / GEMV_CT;
	const int n0 = tile * GEMV_TILE_N + ct * 8;
	const int lo = s * chunk;
	const int hi = lo + chunk < K ? lo + chunk : K;
	const int ng = (hi - lo) / 8; // groups of 8 rows in this split
	constexpr int U = GEMV_UNROLL(MM);
	const bool cols = n0 < N;

	// At MM ≤ 2 the first groups' weight loads go out before x is staged,
	// so the block's start costs one memory round trip, not two (at MM ≥ 4
	// the accumulators leave no registers for it: 128 at most).
	constexpr bool EARLY = MM <= 2;
	pb_raw<8> wr[U][8];
	if (EARLY && cols) gemv_fetch_groups<U>(w, lo, N, n0, kl, ng, wr);

	// x[m][lo + j] as fp32 at xs[(j/8)·GS + (j%8)·MM + m] (0 for m ≥ M):
	// each group of 8 rows padded by 4 floats, so the 4 k-lanes of a warp
	// (consecutive groups) read 4 different banks. At most GEMV_XS values,
	// GEMV_XS/GEMV_THREADS per thread, all loaded before any is stored.
	constexpr int GS = GEMV_GROUP_FLOATS(MM);
	constexpr int XPT = GEMV_XS / GEMV_THREADS;
	__shared__ __align__(16) float xs[GEMV_XS];
	{
		const int nx = (hi - lo) * MM;
		float xv[XPT];
#pragma unroll
		for (int q = 0; q < XPT; q++) {
			const int i = threadIdx.x + q * GEMV_THREADS, j = i / MM, m = i % MM;
			xv[q] = i < nx && m < M ? ld(x[(size_t)m * K + lo + j]) : 0.0f;
		}
#pragma unroll
		for (int q = 0; q < XPT; q++) {
			const int i = threadIdx.x + q * GEMV_THREADS, j = i / MM, m = i % MM;
			if (i < nx) xs[(j >> 3) * GS + (j & 7) * MM + m] = xv[q];
		}
	}
	__syncthreads();

	float acc[MM][8];
#pragma unroll
	for (int m = 0; m < MM; m++) {
#pragma unroll
		for (int e = 0; e < 8; e++) acc[m][e] = 0.0f;
	}
	if (cols) {
		for (int g = kl; g < ng; g += GEMV_KL * U) {
			if (!EARLY || g != kl) gemv_fetch_groups<U>(w, lo, N, n0, g, ng, wr);
#pragma unroll
			for (int u = 0; u < U; u++) {
				const int gg = g + u * GEMV_KL;
				if (gg < ng) {
#pragma unroll
					for (int r = 0; r < 8; r++) {
						float wv[8];
						pb_unpack<8>(wr[u][r], wv);
						const float* xr = xs + gg * GS + r * MM;
#pragma unroll
						for (int m = 0; m < MM; m++) {
							const float xv = xr[m];
#pragma unroll
							for (int e = 0; e < 8; e++) acc[m][e] = __fmaf_rn(xv, wv[e], acc[m][e]);
						}
					}
				}
			}
		}
	}

	// The 4 k-lanes of a warp (lanes c, c + 8, c + 16, c + 24) ...
#pragma unroll
	for (int m = 0; m < MM; m++) {
#pragma unroll
		for (int e = 0; e < 8; e++) {
			float v = acc[m][e];
			v += __shfl_xor_sync(0xffffffffu, v, 8);
			v += __shfl_xor_sync(0xffffffffu, v, 16);
			acc[m][e] = v;
		}
	}
	// ... then the 8 warps, in order, through red[m][warp][column] (xs
	// again: MM·8·64 ≤ GEMV_XS floats).
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	constexpr int NW = GEMV_THREADS / 32;
	float* red = xs;
	__syncthreads(); // every thread is done with x
	if (lane < GEMV_CT) {
#pragma unroll
		for (int m = 0; m < MM; m++) {
#pragma unroll
			for (int e = 0; e < 8; e++) red[(m * NW + warp) * GEMV_TILE_N + ct * 8 + e] = acc[m][e];
		}
	}
	__syncthreads();
	const int tn = tile * GEMV_TILE_N;
	for (int p = threadIdx.x; p < M * GEMV_TILE_N; p += GEMV_THREADS) {
		const int m = p / GEMV_TILE_N, col = p % GEMV_TILE_N;
		if (tn + col >= N) continue;
		float v = 0.0f;
		for (int k = 0; k < NW; k++) v += red[(m * NW + k) * GEMV_TILE_N + col];
		if (S == 1) {
			out[(size_t)m * N + tn + col] = st(v);
		} else {
			ws[((size_t)s * M + m) * N + tn + col] = v;
		}
	}
	if (S == 1) return;

	// The last block of the tile adds the S partials (the fence before the
	// count makes this block's partial visible to the block that adds).
	__shared__ int last;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0) last = atomicAdd(count + tile, 1) == S - 1;
	__syncthreads();
	if (!last) return;
	__threadfence();
	const volatile float* vw = ws;
	for (int p = threadIdx.x; p < M * GEMV_TILE_N; p += GEMV_THREADS) {
		const int m = p / GEMV_TILE_N, col = p % GEMV_TILE_N;
		if (tn + col >= N) continue;
		float v = 0.0f;
		for (int k = 0; k < S; k++) v += vw[((size_t)k * M + m) * N + tn + col];
		out[(size_t)m * N + tn + col] = st(v);
	}
	if (threadIdx.x == 0) count[tile] = 0;
}

extern "C" {

// pb_gemv_mMM: M ≤ MM rows of x (the host launches the smallest MM ≥ M).
#define PB_GEMV(MM)                                                                                                   \
	__global__ void __launch_bounds__(GEMV_THREADS, GEMV_MIN_BLOCKS) pb_gemv_m##MM(const elem* x, const elem* w, float* ws, \
		elem* out, int* count, int M, int K, int N, int chunk) {                                                      \
		gemv<MM>(x, w, ws, out, count, M, K, N, chunk);                                                               \
	}
PB_GEMV(1)
PB_GEMV(2)
PB_GEMV(4)
PB_GEMV(8)

} // extern "C"
