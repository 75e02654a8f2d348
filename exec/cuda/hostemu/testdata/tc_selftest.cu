// A self-test of pb_tc.cuh: one warp loads a 16×16 A tile and a 16×8 B
// tile from global to shared memory with cp.async, reads them into
// fragments with ldmatrix (B through .trans from its row-major [k][n]
// layout), multiplies them with mma.sync and stores D = A·B + C. The
// host-emulation tests compare D with a float64 product; NVRTC compiles it
// in make kernel-check.

#include "pb_common.cuh"
#include "pb_tc.cuh"

extern "C" {

#if PB_ELEM_BYTES == 2
// a: 16×16 row-major, b: 16×8 row-major ([k][n]), c and d: 16×8 fp32.
__global__ void __launch_bounds__(32) pb_tc_selftest(const elem* a, const elem* b, const float* c, float* d) {
	__shared__ __align__(16) elem sa[16 * 16];
	__shared__ __align__(16) elem sb[16 * 8];
	const int lane = threadIdx.x;
	// 16·16·2 bytes of A = 32 chunks of 16 bytes, 16·8·2 of B = 16 chunks.
	pb_cp_async_16(sa + lane * 8, a + lane * 8);
	if (lane < 16) pb_cp_async_16(sb + lane * 8, b + lane * 8);
	pb_cp_async_commit();
	pb_cp_async_wait<0>();
	__syncthreads();
	// A: four 8×8 matrices (rows 0–7/8–15 × cols 0–7/8–15) in the order of
	// a[0..3]: lane l names row l%16 at column 8·(l/16).
	unsigned int fa[4], fb[2];
	pb_ldmatrix_x4(fa, sa + (lane % 16) * 16 + 8 * (lane / 16));
	// B stored [k][n]: two 8×8 matrices (k 0–7, k 8–15), transposed into
	// the column-major fragment; lanes 0–15 name rows k = lane.
	pb_ldmatrix_x2_trans(fb, sb + (lane % 16) * 8);
	const int g = lane / 4, t = lane % 4;
	float fc[4], fd[4];
	for (int i = 0; i < 4; i++) fc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + (i % 2)];
	pb_mma_m16n8k16(fd, fa, fb, fc);
	for (int i = 0; i < 4; i++) d[(g + 8 * (i / 2)) * 8 + 2 * t + (i % 2)] = fd[i];
}

// Every ldmatrix form: m holds four 8×8 matrices of 16-bit elements
// (matrix j at m + 64·j, row-major); lane l names row l % 8 of matrix
// l / 8. out[l·16 + k] is register k of lane l for x1 (k 0), x2 (1–2),
// x4 (3–6), x1.trans (7), x2.trans (8–9), x4.trans (10–13).
__global__ void __launch_bounds__(32) pb_ldmatrix_selftest(const elem* m, unsigned int* out) {
	__shared__ __align__(16) elem sm[4 * 64];
	const int lane = threadIdx.x;
	for (int i = lane; i < 4 * 64; i += 32) sm[i] = m[i];
	__syncthreads();
	const elem* row = sm + 64 * (lane / 8) + 8 * (lane % 8);
	unsigned int r[4];
	unsigned int* o = out + lane * 16;
	pb_ldmatrix_x1(r, row);
	o[0] = r[0];
	pb_ldmatrix_x2(r, row);
	o[1] = r[0]; o[2] = r[1];
	pb_ldmatrix_x4(r, row);
	o[3] = r[0]; o[4] = r[1]; o[5] = r[2]; o[6] = r[3];
	pb_ldmatrix_x1_trans(r, row);
	o[7] = r[0];
	pb_ldmatrix_x2_trans(r, row);
	o[8] = r[0]; o[9] = r[1];
	pb_ldmatrix_x4_trans(r, row);
	o[10] = r[0]; o[11] = r[1]; o[12] = r[2]; o[13] = r[3];
}
#endif

// cp.async with src-size: lane l copies l % 17 bytes of 16 from g + 16·l
// and zero-fills the rest; out gets the 32 × 16 bytes of shared memory.
__global__ void __launch_bounds__(32) pb_cp_async_zfill_selftest(const unsigned char* g, unsigned char* out) {
	__shared__ __align__(16) unsigned char s[32 * 16];
	const int lane = threadIdx.x;
	for (int i = 0; i < 16; i++) s[16 * lane + i] = 0xee;
	pb_cp_async_16_zfill(s + 16 * lane, g + 16 * lane, lane % 17);
	pb_cp_async_wait_all();
	__syncthreads();
	for (int i = 0; i < 16; i++) out[16 * lane + i] = s[16 * lane + i];
}

} // extern "C"
