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
#endif

} // extern "C"
