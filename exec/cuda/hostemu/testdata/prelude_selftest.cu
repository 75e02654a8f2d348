// Probes of the host-emulation prelude's semantics (hostemu_test.go states
// what each must give): shuffles with widths, a barrier that threads which
// returned have left, dynamic shared memory, cp.async completing at its
// wait, and two faults the harness must stop on.

extern "C" {

// 64 threads (two warps); out[4·tid + k] for four shuffles of v = tid.
__global__ void emu_shuffles(int* out) {
	const int v = threadIdx.x;
	out[4 * threadIdx.x + 0] = __shfl_xor_sync(0xffffffffu, v, 1);
	out[4 * threadIdx.x + 1] = __shfl_down_sync(0xffffffffu, v, 3);
	out[4 * threadIdx.x + 2] = __shfl_up_sync(0xffffffffu, v, 2, 16);
	out[4 * threadIdx.x + 3] = __shfl_sync(0xffffffffu, v, 5, 8);
}

// 64 threads; threads 48..63 return at once, the rest pass a barrier and
// read their neighbour's write: out[tid] = (tid + 1) % 48 · 10 + blockIdx.x.
__global__ void emu_barrier(int* out) {
	__shared__ int s[64];
	if (threadIdx.x >= 48) return;
	s[threadIdx.x] = threadIdx.x * 10 + blockIdx.x;
	__syncthreads();
	out[blockIdx.x * 64 + threadIdx.x] = s[(threadIdx.x + 1) % 48];
}

// Dynamic shared memory of n floats: thread t writes element t, and after
// the barrier reads element n − 1 − t; element n (written by nobody) reads
// as the 0xff fill, a NaN.
__global__ void emu_extern_shared(float* out, int n) {
	extern __shared__ float dyn[];
	dyn[threadIdx.x] = (float)threadIdx.x;
	__syncthreads();
	out[threadIdx.x] = dyn[n - 1 - threadIdx.x];
	if (threadIdx.x == 0) out[n] = dyn[n];
}

// cp.async completes at the wait that closes its group: one thread copies
// 16 bytes (4 floats) to dynamic shared memory, reads before the wait (the
// fill, NaN) and after it (the copy).
__global__ void emu_cp_async(const float* g, float* out) {
	extern __shared__ __align__(16) float tile[];
	pb_emu_cp_async_queue(tile, g, 16);
	pb_emu_cp_async_commit();
	out[0] = tile[0];
	pb_emu_cp_async_wait(0);
	out[1] = tile[3];
}

// Lane 0 shuffles while lanes 1–31 wait at __syncthreads: a deadlock.
__global__ void emu_deadlock(int* out) {
	if (threadIdx.x == 0) out[0] = __shfl_xor_sync(0xffffffffu, 1, 1);
	__syncthreads();
}

// Lane 31 skips a shuffle that lane 30 reads from it.
__global__ void emu_missing_lane(int* out) {
	int v = threadIdx.x;
	if (threadIdx.x < 31) v = __shfl_xor_sync(0xffffffffu, v, 1);
	out[threadIdx.x] = v;
}

// CUDA's min and max: out = {min(−3, 5), max(−3, 5), min(2u, 7u),
// max(−1, 2u) (unsigned: 0xffffffff), min of floats 1.5 and −2 (as int bits)}.
__global__ void emu_minmax(int* out) {
	out[0] = min(-3, 5);
	out[1] = max(-3, 5);
	out[2] = (int)min(2u, 7u);
	out[3] = (int)max(-1, 2u);
	out[4] = __float_as_int(min(1.5f, -2.0f));
}

// Static shared memory reads as the 0xff fill (NaN) before a write, in
// every block: out[2b] = the read before, out[2b + 1] = after writing 1.
__global__ void emu_static_shared(float* out) {
	__shared__ float s[4];
	out[2 * blockIdx.x] = s[1];
	s[1] = 1.0f;
	out[2 * blockIdx.x + 1] = s[1];
}

// One thread writes element n of a buffer of n ints: past its end.
__global__ void emu_out_of_bounds(int* out, int n) { out[n] = 1; }

} // extern "C"
