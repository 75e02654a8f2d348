// pb_tc.cuh — tensor-core, ldmatrix and cp.async primitives for partbench
// kernels (sm_80 and newer), as small device functions: the real PTX
// (inline asm) for NVRTC, and under -DPB_HOSTEMU the same operations
// emulated from their documented PTX semantics for the host-emulation
// harness (exec/cuda/hostemu), fragment layouts included. A kernel never
// writes these instructions as its own asm: it calls the helpers, so NVRTC
// and g++ compile the very same source. docs/numerics.md describes the API.
//
// Fragments are 32-bit registers holding two 16-bit elements, the lower
// index in the low half (pb_pack2, pb_lo, pb_hi in pb_common.cuh).
// With g = lane / 4 and t = lane % 4 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"):
//   A 16×16 (row-major), a[4]: a[0] = A[g][2t, 2t+1], a[1] = A[g+8][2t, 2t+1],
//                              a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8, 2t+9]
//   B 16×8 (column-major), b[2]: b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g]
//   C, D 16×8 fp32, c[4]: c[0], c[1] = C[g][2t, 2t+1], c[2], c[3] = C[g+8][2t, 2t+1]
#ifndef PB_TC_CUH
#define PB_TC_CUH

#if !defined(PB_HOSTEMU)

// d = a·b + c on the tensor cores: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.
__device__ __forceinline__ void pb_mma_m16n8k16_f16(float d[4], const unsigned int a[4], const unsigned int b[2], const float c[4]) {
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
		: "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
		: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// The same with bf16 inputs: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32.
__device__ __forceinline__ void pb_mma_m16n8k16_bf16(float d[4], const unsigned int a[4], const unsigned int b[2], const float c[4]) {
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
		: "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
		: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// pb_smem_addr is the shared-space address of a generic pointer to shared memory.
__device__ __forceinline__ unsigned int pb_smem_addr(const void* p) {
	unsigned int a;
	asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }\n" : "=r"(a) : "l"(p));
	return a;
}

// ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16: N 8×8 matrices of
// 16-bit elements from shared memory; lane 8j + r passes the address of
// row r of matrix j (lanes past 8N pass anything), and lane l receives in
// r[j] the elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of matrix j — of its
// transpose with .trans. Rows are 16 bytes, 16-byte aligned.
__device__ __forceinline__ void pb_ldmatrix_x1(unsigned int r[1], const void* row) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(pb_smem_addr(row)));
}
__device__ __forceinline__ void pb_ldmatrix_x2(unsigned int r[2], const void* row) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(pb_smem_addr(row)));
}
__device__ __forceinline__ void pb_ldmatrix_x4(unsigned int r[4], const void* row) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		: "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(pb_smem_addr(row)));
}
__device__ __forceinline__ void pb_ldmatrix_x1_trans(unsigned int r[1], const void* row) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(pb_smem_addr(row)));
}
__device__ __forceinline__ void pb_ldmatrix_x2_trans(unsigned int r[2], const void* row) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(pb_smem_addr(row)));
}
__device__ __forceinline__ void pb_ldmatrix_x4_trans(unsigned int r[4], const void* row) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		: "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(pb_smem_addr(row)));
}

// cp.async.cg.shared.global: 16 bytes from global src to shared dst (both
// 16-byte aligned), asynchronously; complete only after a wait below.
__device__ __forceinline__ void pb_cp_async_16(void* dst, const void* src) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(pb_smem_addr(dst)), "l"(src));
}

// The same copying only src_bytes (0…16) and filling the rest of the 16
// with zeros (a tile's tail: src_bytes 0 reads nothing).
__device__ __forceinline__ void pb_cp_async_16_zfill(void* dst, const void* src, int src_bytes) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(pb_smem_addr(dst)), "l"(src), "r"(src_bytes));
}

// cp.async.commit_group: the copies issued since the last commit form a group.
__device__ __forceinline__ void pb_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// cp.async.wait_group N: wait until at most N of this thread's committed
// groups are pending (the newest N). Other threads' copies need a
// __syncthreads after the wait to be visible.
template <int N> __device__ __forceinline__ void pb_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

// cp.async.wait_all: commit, then wait for every copy of this thread.
__device__ __forceinline__ void pb_cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

#else // PB_HOSTEMU: the prelude (exec/cuda/hostemu) provides pb_emu_*

// One warp-wide mma: every lane posts its fragments, then computes its own
// d from the whole A, B and C (products exact, sums in fp64 rounded once to
// fp32, which bounds what the tensor cores' fp32 accumulation does).
template <bool BF16>
__device__ void pb_emu_mma_m16n8k16(float d[4], const unsigned int a[4], const unsigned int b[2], const float c[4]) {
	unsigned int* mine = pb_emu_warp_slot();
	for (int i = 0; i < 4; i++) mine[i] = a[i];
	mine[4] = b[0];
	mine[5] = b[1];
	for (int i = 0; i < 4; i++) mine[6 + i] = pb_emu_f32_bits(c[i]);
	pb_emu_warp_sync();
	auto half = [](unsigned int r, int hi) -> double {
		const unsigned short h = (unsigned short)(hi ? r >> 16 : r & 0xffffu);
		return BF16 ? (double)pb_emu_bf16_to_f32(h) : (double)pb_emu_f16_to_f32(h);
	};
	// A[row][k]: lane 4·(row%8) + (k%8)/2 holds it in register (row/8) + 2·(k/8).
	auto A = [&](int row, int k) -> double {
		const unsigned int* s = pb_emu_warp_slot_of(4 * (row % 8) + (k % 8) / 2);
		return half(s[(row / 8) + 2 * (k / 8)], k & 1);
	};
	// B[k][n]: lane 4·n + (k%8)/2, register k/8.
	auto B = [&](int k, int n) -> double {
		const unsigned int* s = pb_emu_warp_slot_of(4 * n + (k % 8) / 2);
		return half(s[4 + k / 8], k & 1);
	};
	const int lane = pb_emu_lane(), g = lane / 4, t = lane % 4;
	float out[4];
	for (int i = 0; i < 4; i++) {
		const int row = g + 8 * (i / 2), col = 2 * t + (i % 2);
		double acc = (double)c[i];
		for (int k = 0; k < 16; k++) acc += A(row, k) * B(k, col);
		out[i] = (float)acc;
	}
	pb_emu_warp_sync(); // every lane has read the slots before any reuses them
	for (int i = 0; i < 4; i++) d[i] = out[i];
}

__device__ inline void pb_mma_m16n8k16_f16(float d[4], const unsigned int a[4], const unsigned int b[2], const float c[4]) {
	pb_emu_mma_m16n8k16<false>(d, a, b, c);
}
__device__ inline void pb_mma_m16n8k16_bf16(float d[4], const unsigned int a[4], const unsigned int b[2], const float c[4]) {
	pb_emu_mma_m16n8k16<true>(d, a, b, c);
}

// ldmatrix: every lane posts its row address, then reads its elements of
// each matrix from the rows the owning lanes named.
template <int N, bool TRANS>
__device__ void pb_emu_ldmatrix(unsigned int* r, const void* row) {
	pb_emu_check_shared(row, 16, "ldmatrix row");
	if (((unsigned long long)row) % 16 != 0) pb_emu_fail("ldmatrix: row address not 16-byte aligned");
	unsigned int* mine = pb_emu_warp_slot();
	const unsigned long long p = (unsigned long long)row;
	mine[0] = (unsigned int)p;
	mine[1] = (unsigned int)(p >> 32);
	pb_emu_warp_sync();
	const int lane = pb_emu_lane();
	auto at = [&](int j, int rr, int cc) -> unsigned int {
		const unsigned int* s = pb_emu_warp_slot_of(8 * j + rr);
		const unsigned short* m = (const unsigned short*)(((unsigned long long)s[1] << 32) | s[0]);
		return m[cc];
	};
	unsigned int out[N];
	for (int j = 0; j < N; j++) {
		const int a = lane / 4, b = 2 * (lane % 4);
		if (TRANS) out[j] = at(j, b, a) | (at(j, b + 1, a) << 16);
		else out[j] = at(j, a, b) | (at(j, a, b + 1) << 16);
	}
	pb_emu_warp_sync();
	for (int j = 0; j < N; j++) r[j] = out[j];
}

__device__ inline void pb_ldmatrix_x1(unsigned int r[1], const void* row) { pb_emu_ldmatrix<1, false>(r, row); }
__device__ inline void pb_ldmatrix_x2(unsigned int r[2], const void* row) { pb_emu_ldmatrix<2, false>(r, row); }
__device__ inline void pb_ldmatrix_x4(unsigned int r[4], const void* row) { pb_emu_ldmatrix<4, false>(r, row); }
__device__ inline void pb_ldmatrix_x1_trans(unsigned int r[1], const void* row) { pb_emu_ldmatrix<1, true>(r, row); }
__device__ inline void pb_ldmatrix_x2_trans(unsigned int r[2], const void* row) { pb_emu_ldmatrix<2, true>(r, row); }
__device__ inline void pb_ldmatrix_x4_trans(unsigned int r[4], const void* row) { pb_emu_ldmatrix<4, true>(r, row); }

// cp.async: the copy is queued and done at the wait that completes its
// group, never earlier, so a kernel that reads a tile before its wait sees
// stale shared memory here as it may on the device.
__device__ inline void pb_cp_async_16_zfill(void* dst, const void* src, int src_bytes) {
	if (src_bytes < 0 || src_bytes > 16) pb_emu_fail("cp.async: src_bytes outside 0..16");
	if (((unsigned long long)dst) % 16 != 0 || ((unsigned long long)src) % 16 != 0) pb_emu_fail("cp.async: address not 16-byte aligned");
	pb_emu_check_shared(dst, 16, "cp.async destination");
	pb_emu_cp_async_queue(dst, src, src_bytes);
}
__device__ inline void pb_cp_async_16(void* dst, const void* src) { pb_cp_async_16_zfill(dst, src, 16); }
__device__ inline void pb_cp_async_commit() { pb_emu_cp_async_commit(); }
template <int N> __device__ inline void pb_cp_async_wait() { pb_emu_cp_async_wait(N); }
__device__ inline void pb_cp_async_wait_all() {
	pb_emu_cp_async_commit();
	pb_emu_cp_async_wait(0);
}

#endif // PB_HOSTEMU

#if PB_ELEM_BYTES == 2
// pb_mma_m16n8k16 is the mma of the element type (-DPB_F16 or -DPB_BF16).
__device__ __forceinline__ void pb_mma_m16n8k16(float d[4], const unsigned int a[4], const unsigned int b[2], const float c[4]) {
#if defined(PB_BF16)
	pb_mma_m16n8k16_bf16(d, a, b, c);
#else
	pb_mma_m16n8k16_f16(d, a, b, c);
#endif
}
#endif

#endif // PB_TC_CUH
