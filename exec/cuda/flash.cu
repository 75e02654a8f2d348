// Prefill attention on tensor cores, FlashAttention-2 style (flashmodel.go
// is its Go model: the same tiles, the same order, the same rounding).
//
// Compiled by NVRTC per element type with -DPB_F16 or -DPB_BF16 (fp32 has
// no m16n8k16 mma: with -DPB_F32 this file defines no kernel and the
// backend keeps pb_attention_vV). It includes no header.
//
// One block per (64- or 128-query tile of one sequence, query head), of 4
// or 8 warps; warp w owns query rows 16w..16w+15 of the tile. K and V pass through
// shared memory in tiles of 64 keys, double-buffered with cp.async: tile
// t+1 is in flight while tile t is multiplied. S = Q·Kᵀ and O += P·V run on
// mma.sync m16n8k16 (fp16 or bf16 inputs, fp32 accumulators), with A and B
// fragments read from shared memory by ldmatrix (.trans for V). The
// softmax is online, per row in registers: running max m of base-2 scores,
// running sum l of the unrounded p = 2^(s − m), rescale of l and O by
// 2^(m − m') when a tile raises the max; P is rounded to the storage type
// as it becomes the A operand of the PV mma. Causal key tiles past the
// query tile's last position are never loaded; tiles that cross the
// diagonal or the cache's end are masked per element. Query head h reads
// key/value head h / (hl / kvl). Variants of the same arithmetic (another
// launch order, fewer masked tiles, 4 warps of 32 rows at BR = 128:
// flash_fwd_w32) are entry points of their own, chosen at run time
// (flash_variants.go).
//
// Shared memory (dynamic): Q [BR][D+8], K [2][64][D+8], V [2][64][D+8]
// elements; the 8-element pad puts the 8 rows an ldmatrix reads in
// different banks. BR = 64: 46,080 bytes for D = 64, 87,040 for D = 128;
// BR = 128: 55,296 and 104,448. Above the 48 KB default the host raises
// the kernel's limit with cuFuncSetAttribute.

#if defined(PB_F16) || defined(PB_BF16)

#define FLASH_BC 64 // keys per K/V tile; a block of BR queries has BR/16 warps

// The element type, pb_pack2 and the tensor-core helpers are the shared
// headers': the real PTX for NVRTC, their emulation under -DPB_HOSTEMU.
#include "pb_common.cuh"
#include "pb_tc.cuh"

typedef unsigned int u32;

// Loads rows [0, ROWS) of a tile (row stride D + 8 elements in shared
// memory) from global rows src(r) (null: zeros), 16 bytes per copy, by
// THREADS threads.
template <int D, int ROWS, int THREADS, typename Src>
__device__ __forceinline__ void flash_load_tile(elem* dst, const elem* fallback, Src src) {
	constexpr int CH = D / 8; // 16-byte chunks per row
	for (int k = threadIdx.x; k < ROWS * CH; k += THREADS) {
		const int r = k / CH, c = k % CH;
		const elem* s = src(r);
		pb_cp_async_16_zfill(dst + r * (D + 8) + c * 8, s ? s + c * 8 : fallback, s ? 16 : 0);
	}
}

// Variants (flash_variants.go; the default is 0): FLASH_HEAVY_FIRST maps
// the launch order so that the query tiles with the most causal key tiles
// (the last ones of each sequence) start first and the light ones fill
// the tail; FLASH_DIAG_MASK masks per element only the key tiles that
// cross a row of the warp's diagonal or the cache's end (a warp's other
// tiles are scaled without the compare and select). Both compute the same
// values in the same order as the default, so each output is bit for bit
// the default's.
#define FLASH_HEAVY_FIRST 1
#define FLASH_DIAG_MASK 2

template <int D, int BR, int VAR>
__device__ void flash_fwd(const elem* qkv, elem* ao, const elem* kc, const elem* vc, const int* pos,
	int seq0, int q, int hl, int kvl, int context, float scale_log2, int bidir) {
	constexpr int LD = D + 8;
	constexpr int THREADS = BR * 2; // BR/16 warps
	extern __shared__ __align__(16) unsigned char flash_smem[];
	elem* sq = reinterpret_cast<elem*>(flash_smem);
	elem* sk = sq + BR * LD;             // [2][64][LD]
	elem* sv = sk + 2 * FLASH_BC * LD;   // [2][64][LD]

	const int tiles = (q + BR - 1) / BR;
	int i = blockIdx.x / tiles, j0 = (blockIdx.x % tiles) * BR, h = blockIdx.y;
	if (VAR & FLASH_HEAVY_FIRST) {
		// Blocks start in the order of b = x + X·y: b runs over the heads,
		// then the sequences, then the query tiles from the last to the first.
		const int b = blockIdx.x + gridDim.x * blockIdx.y;
		const int per = (gridDim.x / tiles) * gridDim.y; // blocks per query tile
		h = b % gridDim.y;
		i = (b % per) / gridDim.y;
		j0 = (tiles - 1 - b / per) * BR;
	}
	const int kvh = h / (hl / kvl);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, qd = lane & 3; // the accumulator's row and column pair

	const int past = *pos;
	const int n = past + q; // keys in the cache after this pass
	const int last = (j0 + BR < q ? j0 + BR : q) - 1;
	const int end = bidir ? n : past + last + 1;
	const int ntk = (end + FLASH_BC - 1) / FLASH_BC;

	const size_t qrow = (size_t)(hl + 2 * kvl) * D;
	const size_t kvw = (size_t)kvl * D;
	const elem* qbase = qkv + (size_t)i * q * qrow + (size_t)h * D;
	const size_t cbase = (size_t)(seq0 + i) * context * kvw + (size_t)kvh * D;

	flash_load_tile<D, BR, THREADS>(sq, qkv, [&](int r) -> const elem* { return j0 + r < q ? qbase + (size_t)(j0 + r) * qrow : 0; });
	auto load_kv = [&](int t) {
		const int k0 = t * FLASH_BC;
		elem* dk = sk + (t & 1) * FLASH_BC * LD;
		elem* dv = sv + (t & 1) * FLASH_BC * LD;
		flash_load_tile<D, FLASH_BC, THREADS>(dk, kc, [&](int r) -> const elem* { return k0 + r < n ? kc + cbase + (size_t)(k0 + r) * kvw : 0; });
		flash_load_tile<D, FLASH_BC, THREADS>(dv, vc, [&](int r) -> const elem* { return k0 + r < n ? vc + cbase + (size_t)(k0 + r) * kvw : 0; });
	};
	load_kv(0);
	pb_cp_async_commit();

	u32 qf[D / 16][4];
	float o[D / 8][4];
#pragma unroll
	for (int d = 0; d < D / 8; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
	float m[2] = {-PB_INF, -PB_INF}, l[2] = {0.0f, 0.0f};
	const int row0 = warp * 16 + g; // this thread's rows: row0 and row0 + 8
	const int qpos0 = past + j0 + row0;
	// Key tiles [0, whole) are visible to every row of the warp: inside
	// the cache, and (causal) at or before the warp's first row, whose
	// position is past + j0 + 16·warp: (t+1)·64 ≤ n and (t+1)·64 − 1 ≤ it.
	const int whole = (VAR & FLASH_DIAG_MASK) ? min(n / FLASH_BC, bidir ? n : (past + j0 + warp * 16 + 1) / FLASH_BC) : 0;

	for (int t = 0; t < ntk; t++) {
		if (t + 1 < ntk) {
			load_kv(t + 1);
			pb_cp_async_commit();
			pb_cp_async_wait<1>();
		} else {
			pb_cp_async_wait<0>();
		}
		__syncthreads();
		if (t == 0) {
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++) pb_ldmatrix_x4(qf[kk], sq + (warp * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8);
		}
		const elem* tk = sk + (t & 1) * FLASH_BC * LD;
		const elem* tv = sv + (t & 1) * FLASH_BC * LD;
		const int k0 = t * FLASH_BC;

		// S = Q·Kᵀ for the warp's 16 rows × 64 keys: 8 accumulators of 16×8.
		float s[FLASH_BC / 8][4];
#pragma unroll
		for (int nt = 0; nt < FLASH_BC / 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
			for (int np = 0; np < FLASH_BC / 16; np++) {
				u32 b[4];
				pb_ldmatrix_x4(b, tk + (np * 16 + (lane >> 4) * 8 + (lane & 7)) * LD + kk * 16 + ((lane >> 3) & 1) * 8);
				pb_mma_m16n8k16(s[2 * np], qf[kk], b, s[2 * np]);
				pb_mma_m16n8k16(s[2 * np + 1], qf[kk], b + 2, s[2 * np + 1]);
			}
		}

		// Scale to base 2, mask, and the tile's row maxima.
		float mt[2] = {m[0], m[1]};
		if ((VAR & FLASH_DIAG_MASK) && t < whole) {
#pragma unroll
			for (int nt = 0; nt < FLASH_BC / 8; nt++) {
#pragma unroll
				for (int e = 0; e < 4; e++) {
					s[nt][e] *= scale_log2;
					mt[e >> 1] = fmaxf(mt[e >> 1], s[nt][e]);
				}
			}
		} else {
#pragma unroll
		for (int nt = 0; nt < FLASH_BC / 8; nt++) {
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int key = k0 + nt * 8 + 2 * qd + (e & 1);
				const int qp = qpos0 + (e >> 1) * 8;
				const bool visible = key < n && (bidir || key <= qp);
				s[nt][e] = visible ? s[nt][e] * scale_log2 : -PB_INF;
				mt[e >> 1] = fmaxf(mt[e >> 1], s[nt][e]);
			}
		}
		}
#pragma unroll
		for (int r = 0; r < 2; r++) {
			mt[r] = fmaxf(mt[r], __shfl_xor_sync(0xffffffffu, mt[r], 1));
			mt[r] = fmaxf(mt[r], __shfl_xor_sync(0xffffffffu, mt[r], 2));
		}
		// p = 2^(s − m'), with 0 subtracted while a row has seen no key.
		float ms[2], corr[2], ls[2] = {0.0f, 0.0f};
#pragma unroll
		for (int r = 0; r < 2; r++) {
			ms[r] = mt[r] == -PB_INF ? 0.0f : mt[r];
			corr[r] = exp2f(m[r] - ms[r]);
		}
#pragma unroll
		for (int nt = 0; nt < FLASH_BC / 8; nt++) {
#pragma unroll
			for (int e = 0; e < 4; e++) {
				s[nt][e] = exp2f(s[nt][e] - ms[e >> 1]);
				ls[e >> 1] += s[nt][e];
			}
		}
#pragma unroll
		for (int r = 0; r < 2; r++) {
			ls[r] += __shfl_xor_sync(0xffffffffu, ls[r], 1);
			ls[r] += __shfl_xor_sync(0xffffffffu, ls[r], 2);
			l[r] = l[r] * corr[r] + ls[r];
			m[r] = mt[r];
		}
#pragma unroll
		for (int d = 0; d < D / 8; d++) {
			o[d][0] *= corr[0];
			o[d][1] *= corr[0];
			o[d][2] *= corr[1];
			o[d][3] *= corr[1];
		}

		// O += P·V: P's accumulators of keys 16ks..16ks+15 are the A fragment.
#pragma unroll
		for (int ks = 0; ks < FLASH_BC / 16; ks++) {
			if (k0 + ks * 16 >= n) break; // past the cache's end: p = 0 (V rows zero-filled)
			u32 a[4];
			a[0] = pb_pack2(s[2 * ks][0], s[2 * ks][1]);
			a[1] = pb_pack2(s[2 * ks][2], s[2 * ks][3]);
			a[2] = pb_pack2(s[2 * ks + 1][0], s[2 * ks + 1][1]);
			a[3] = pb_pack2(s[2 * ks + 1][2], s[2 * ks + 1][3]);
#pragma unroll
			for (int dp = 0; dp < D / 16; dp++) {
				u32 b[4];
				pb_ldmatrix_x4_trans(b, tv + (ks * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LD + dp * 16 + (lane >> 4) * 8);
				pb_mma_m16n8k16(o[2 * dp], a, b, o[2 * dp]);
				pb_mma_m16n8k16(o[2 * dp + 1], a, b + 2, o[2 * dp + 1]);
			}
		}
		__syncthreads(); // the next iteration's copies overwrite this tile's buffer
	}

	// O / l, rounded, for the rows that are queries of this pass.
#pragma unroll
	for (int r = 0; r < 2; r++) {
		const int j = j0 + row0 + r * 8;
		if (j >= q) continue;
		const float inv = 1.0f / l[r];
		elem* out = ao + ((size_t)i * q + j) * hl * D + (size_t)h * D;
#pragma unroll
		for (int d = 0; d < D / 8; d++) {
			*reinterpret_cast<u32*>(out + d * 8 + 2 * qd) = pb_pack2(o[d][2 * r] * inv, o[d][2 * r + 1] * inv);
		}
	}
}

// flash_fwd_w32 is flash_fwd at BR = 128 with 4 warps of 32 query rows
// (two m16 tiles each) instead of 8 of 16: every K and V fragment loaded
// by ldmatrix feeds two mma instead of one (128 bytes of shared memory per
// mma instead of 256), and a warp has twice the independent mma between
// two barriers. Q's fragments are read from shared memory at each step of
// the reduction (the accumulators of 32 rows leave no room to hold them).
// Each row's sums are the default kernel's, in the same order.
template <int D, int VAR>
__device__ void flash_fwd_w32(const elem* qkv, elem* ao, const elem* kc, const elem* vc, const int* pos,
	int seq0, int q, int hl, int kvl, int context, float scale_log2, int bidir) {
	constexpr int BR = 128, MT = 2; // query rows per block; m16 tiles per warp
	constexpr int LD = D + 8;
	constexpr int THREADS = BR * 2 / MT; // BR/32 warps
	extern __shared__ __align__(16) unsigned char flash_smem[];
	elem* sq = reinterpret_cast<elem*>(flash_smem);
	elem* sk = sq + BR * LD;           // [2][64][LD]
	elem* sv = sk + 2 * FLASH_BC * LD; // [2][64][LD]

	const int tiles = (q + BR - 1) / BR;
	int i = blockIdx.x / tiles, j0 = (blockIdx.x % tiles) * BR, h = blockIdx.y;
	if (VAR & FLASH_HEAVY_FIRST) { // as flash_fwd
		const int b = blockIdx.x + gridDim.x * blockIdx.y;
		const int per = (gridDim.x / tiles) * gridDim.y;
		h = b % gridDim.y;
		i = (b % per) / gridDim.y;
		j0 = (tiles - 1 - b / per) * BR;
	}
	const int kvh = h / (hl / kvl);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, qd = lane & 3;

	const int past = *pos;
	const int n = past + q;
	const int last = (j0 + BR < q ? j0 + BR : q) - 1;
	const int end = bidir ? n : past + last + 1;
	const int ntk = (end + FLASH_BC - 1) / FLASH_BC;

	const size_t qrow = (size_t)(hl + 2 * kvl) * D;
	const size_t kvw = (size_t)kvl * D;
	const elem* qbase = qkv + (size_t)i * q * qrow + (size_t)h * D;
	const size_t cbase = (size_t)(seq0 + i) * context * kvw + (size_t)kvh * D;

	flash_load_tile<D, BR, THREADS>(sq, qkv, [&](int r) -> const elem* { return j0 + r < q ? qbase + (size_t)(j0 + r) * qrow : 0; });
	auto load_kv = [&](int t) {
		const int k0 = t * FLASH_BC;
		elem* dk = sk + (t & 1) * FLASH_BC * LD;
		elem* dv = sv + (t & 1) * FLASH_BC * LD;
		flash_load_tile<D, FLASH_BC, THREADS>(dk, kc, [&](int r) -> const elem* { return k0 + r < n ? kc + cbase + (size_t)(k0 + r) * kvw : 0; });
		flash_load_tile<D, FLASH_BC, THREADS>(dv, vc, [&](int r) -> const elem* { return k0 + r < n ? vc + cbase + (size_t)(k0 + r) * kvw : 0; });
	};
	load_kv(0);
	pb_cp_async_commit();

	float o[MT][D / 8][4];
	float m[MT][2], l[MT][2];
#pragma unroll
	for (int mt = 0; mt < MT; mt++) {
#pragma unroll
		for (int d = 0; d < D / 8; d++) o[mt][d][0] = o[mt][d][1] = o[mt][d][2] = o[mt][d][3] = 0.0f;
		m[mt][0] = m[mt][1] = -PB_INF;
		l[mt][0] = l[mt][1] = 0.0f;
	}
	const int wrow = warp * 16 * MT; // the warp's first row in the tile
	const int qposw = past + j0 + wrow + g; // this thread's rows: qposw + 16·mt + 8·r
	const int whole = (VAR & FLASH_DIAG_MASK) ? min(n / FLASH_BC, bidir ? n : (past + j0 + wrow + 1) / FLASH_BC) : 0;

	for (int t = 0; t < ntk; t++) {
		if (t + 1 < ntk) {
			load_kv(t + 1);
			pb_cp_async_commit();
			pb_cp_async_wait<1>();
		} else {
			pb_cp_async_wait<0>();
		}
		__syncthreads();
		const elem* tk = sk + (t & 1) * FLASH_BC * LD;
		const elem* tv = sv + (t & 1) * FLASH_BC * LD;
		const int k0 = t * FLASH_BC;

		float s[MT][FLASH_BC / 8][4];
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
#pragma unroll
			for (int nt = 0; nt < FLASH_BC / 8; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
		}
#pragma unroll 1
		for (int kk = 0; kk < D / 16; kk++) {
			u32 qa[MT][4];
#pragma unroll
			for (int mt = 0; mt < MT; mt++) pb_ldmatrix_x4(qa[mt], sq + (wrow + mt * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8);
#pragma unroll
			for (int np = 0; np < FLASH_BC / 16; np++) {
				u32 b[4];
				pb_ldmatrix_x4(b, tk + (np * 16 + (lane >> 4) * 8 + (lane & 7)) * LD + kk * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
				for (int mt = 0; mt < MT; mt++) {
					pb_mma_m16n8k16(s[mt][2 * np], qa[mt], b, s[mt][2 * np]);
					pb_mma_m16n8k16(s[mt][2 * np + 1], qa[mt], b + 2, s[mt][2 * np + 1]);
				}
			}
		}

		u32 pa[MT][FLASH_BC / 16][4]; // P as the PV mma's A fragments
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
			float mt2[2] = {m[mt][0], m[mt][1]};
			const int qp0 = qposw + mt * 16;
			if ((VAR & FLASH_DIAG_MASK) && t < whole) {
#pragma unroll
				for (int nt = 0; nt < FLASH_BC / 8; nt++) {
#pragma unroll
					for (int e = 0; e < 4; e++) {
						s[mt][nt][e] *= scale_log2;
						mt2[e >> 1] = fmaxf(mt2[e >> 1], s[mt][nt][e]);
					}
				}
			} else {
#pragma unroll
				for (int nt = 0; nt < FLASH_BC / 8; nt++) {
#pragma unroll
					for (int e = 0; e < 4; e++) {
						const int key = k0 + nt * 8 + 2 * qd + (e & 1);
						const int qp = qp0 + (e >> 1) * 8;
						const bool visible = key < n && (bidir || key <= qp);
						s[mt][nt][e] = visible ? s[mt][nt][e] * scale_log2 : -PB_INF;
						mt2[e >> 1] = fmaxf(mt2[e >> 1], s[mt][nt][e]);
					}
				}
			}
#pragma unroll
			for (int r = 0; r < 2; r++) {
				mt2[r] = fmaxf(mt2[r], __shfl_xor_sync(0xffffffffu, mt2[r], 1));
				mt2[r] = fmaxf(mt2[r], __shfl_xor_sync(0xffffffffu, mt2[r], 2));
			}
			float ms[2], corr[2], ls[2] = {0.0f, 0.0f};
#pragma unroll
			for (int r = 0; r < 2; r++) {
				ms[r] = mt2[r] == -PB_INF ? 0.0f : mt2[r];
				corr[r] = exp2f(m[mt][r] - ms[r]);
			}
#pragma unroll
			for (int nt = 0; nt < FLASH_BC / 8; nt++) {
#pragma unroll
				for (int e = 0; e < 4; e++) {
					s[mt][nt][e] = exp2f(s[mt][nt][e] - ms[e >> 1]);
					ls[e >> 1] += s[mt][nt][e];
				}
			}
#pragma unroll
			for (int r = 0; r < 2; r++) {
				ls[r] += __shfl_xor_sync(0xffffffffu, ls[r], 1);
				ls[r] += __shfl_xor_sync(0xffffffffu, ls[r], 2);
				l[mt][r] = l[mt][r] * corr[r] + ls[r];
				m[mt][r] = mt2[r];
			}
#pragma unroll
			for (int d = 0; d < D / 8; d++) {
				o[mt][d][0] *= corr[0];
				o[mt][d][1] *= corr[0];
				o[mt][d][2] *= corr[1];
				o[mt][d][3] *= corr[1];
			}
#pragma unroll
			for (int ks = 0; ks < FLASH_BC / 16; ks++) {
				pa[mt][ks][0] = pb_pack2(s[mt][2 * ks][0], s[mt][2 * ks][1]);
				pa[mt][ks][1] = pb_pack2(s[mt][2 * ks][2], s[mt][2 * ks][3]);
				pa[mt][ks][2] = pb_pack2(s[mt][2 * ks + 1][0], s[mt][2 * ks + 1][1]);
				pa[mt][ks][3] = pb_pack2(s[mt][2 * ks + 1][2], s[mt][2 * ks + 1][3]);
			}
		}

		// O += P·V, each V fragment feeding both m16 tiles.
#pragma unroll
		for (int ks = 0; ks < FLASH_BC / 16; ks++) {
			if (k0 + ks * 16 >= n) break;
#pragma unroll
			for (int dp = 0; dp < D / 16; dp++) {
				u32 b[4];
				pb_ldmatrix_x4_trans(b, tv + (ks * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LD + dp * 16 + (lane >> 4) * 8);
#pragma unroll
				for (int mt = 0; mt < MT; mt++) {
					pb_mma_m16n8k16(o[mt][2 * dp], pa[mt][ks], b, o[mt][2 * dp]);
					pb_mma_m16n8k16(o[mt][2 * dp + 1], pa[mt][ks], b + 2, o[mt][2 * dp + 1]);
				}
			}
		}
		__syncthreads();
	}

#pragma unroll
	for (int mt = 0; mt < MT; mt++) {
#pragma unroll
		for (int r = 0; r < 2; r++) {
			const int j = j0 + wrow + mt * 16 + g + r * 8;
			if (j >= q) continue;
			const float inv = 1.0f / l[mt][r];
			elem* out = ao + ((size_t)i * q + j) * hl * D + (size_t)h * D;
#pragma unroll
			for (int d = 0; d < D / 8; d++) {
				*reinterpret_cast<u32*>(out + d * 8 + 2 * qd) = pb_pack2(o[mt][d][2 * r] * inv, o[mt][d][2 * r + 1] * inv);
			}
		}
	}
}

extern "C" {

// pb_flash_fwd_d{64,128}: 64-query tiles, 4 warps; _b128: 128-query
// tiles, 8 warps (K and V tiles shared by twice the queries). The suffix
// _hf is FLASH_HEAVY_FIRST, _dm FLASH_DIAG_MASK, _hfdm both.
#define PB_FLASH(D, BR, VAR, SUFFIX)                                                                               \
	__global__ void __launch_bounds__(BR * 2) pb_flash_fwd_d##D##SUFFIX(const elem* qkv, elem* ao, const elem* kc,  \
		const elem* vc, const int* pos, int seq0, int q, int hl, int kvl, int context, float scale_log2, int bidir) { \
		flash_fwd<D, BR, VAR>(qkv, ao, kc, vc, pos, seq0, q, hl, kvl, context, scale_log2, bidir);                   \
	}
// PB_FLASH_SET picks the variants compiled, one bit each in
// flash_variants.go's order (1 default, 2 _hf, 4 _dm, 8 _hfdm, 16
// _w32hfdm): the backend compiles the default and the selected one (NVRTC's
// time grows with the entry points), the gate and the harness all.
#ifndef PB_FLASH_SET
#define PB_FLASH_SET 31
#endif
#if PB_FLASH_SET & 2
#define PB_FLASH_HF(D, BR, SUFFIX) PB_FLASH(D, BR, FLASH_HEAVY_FIRST, SUFFIX##_hf)
#else
#define PB_FLASH_HF(D, BR, SUFFIX)
#endif
#if PB_FLASH_SET & 4
#define PB_FLASH_DM(D, BR, SUFFIX) PB_FLASH(D, BR, FLASH_DIAG_MASK, SUFFIX##_dm)
#else
#define PB_FLASH_DM(D, BR, SUFFIX)
#endif
#if PB_FLASH_SET & 8
#define PB_FLASH_HFDM(D, BR, SUFFIX) PB_FLASH(D, BR, FLASH_HEAVY_FIRST | FLASH_DIAG_MASK, SUFFIX##_hfdm)
#else
#define PB_FLASH_HFDM(D, BR, SUFFIX)
#endif
#define PB_FLASH_VARIANTS(D, BR, SUFFIX) \
	PB_FLASH(D, BR, 0, SUFFIX)           \
	PB_FLASH_HF(D, BR, SUFFIX)           \
	PB_FLASH_DM(D, BR, SUFFIX)           \
	PB_FLASH_HFDM(D, BR, SUFFIX)
PB_FLASH_VARIANTS(64, 64, )
PB_FLASH_VARIANTS(128, 64, )
PB_FLASH_VARIANTS(64, 128, _b128)
PB_FLASH_VARIANTS(128, 128, _b128)

// pb_flash_fwd_d{64,128}_b128_w32hfdm: 128-query tiles, 4 warps of 32 rows,
// heavy first and diagonal mask (without the two, the per-element mask on
// every tile takes the d128 bf16 kernel past 255 registers: it spills).
// The reduction over the head dim is not unrolled (#pragma unroll 1):
// unrolled, the d128 kernels spill.
#define PB_FLASH_W32(D, VAR, SUFFIX)                                                                                 \
	__global__ void __launch_bounds__(128) pb_flash_fwd_d##D##_b128_w32##SUFFIX(const elem* qkv, elem* ao,           \
		const elem* kc, const elem* vc, const int* pos, int seq0, int q, int hl, int kvl, int context, float scale_log2, \
		int bidir) {                                                                                                   \
		flash_fwd_w32<D, VAR>(qkv, ao, kc, vc, pos, seq0, q, hl, kvl, context, scale_log2, bidir);                       \
	}
#if PB_FLASH_SET & 16
PB_FLASH_W32(64, FLASH_HEAVY_FIRST | FLASH_DIAG_MASK, hfdm)
PB_FLASH_W32(128, FLASH_HEAVY_FIRST | FLASH_DIAG_MASK, hfdm)
#endif

} // extern "C"

#endif // PB_F16 || PB_BF16
