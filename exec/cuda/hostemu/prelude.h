// prelude.h — the host-emulation prelude: what lets g++ compile partbench's
// CUDA kernels (exec/cuda/kernels/*.cu, unchanged) and run them on CPU
// threads. It is force-included before the kernel file (g++ -include).
//
// A launch runs its blocks one after another. Each block's threads are
// real threads (pthreads, one per CUDA thread, made once per launch):
// __syncthreads is a barrier of the block's live threads, and the warp
// operations (shuffles, __syncwarp, and pb_tc.cuh's mma.sync and ldmatrix)
// are barrier-exchanges among the live lanes of the 32-thread warp. Static
// __shared__ variables become static storage in one section (one block
// runs at a time, so each block has them to itself); extern __shared__
// arrays point at the launch's dynamic shared memory. Both are filled with
// 0xff bytes before each block (NaN in every float type), so a read before
// a write shows. A thread that
// returns leaves its barriers, as on the device. A thread that reads a
// shuffle from a lane that did not take part, a barrier that no longer
// moves (divergent __syncthreads, a missing lane), or an access helper out
// of bounds stops the program with a message on stderr and exit status 3.
//
// __half and __nv_bfloat16 are host types with the device's conversions
// (round to nearest even); math functions are the host's libm in single
// precision (the device's are within 2 ulp: docs/numerics.md).
#ifndef PB_HOSTEMU_PRELUDE_H
#define PB_HOSTEMU_PRELUDE_H

#define PB_HOSTEMU 1

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

// ---- CUDA keywords ----
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static __attribute__((section("pb_emu_shared")))
#define __constant__ static

[[noreturn]] inline void pb_emu_fail(const char* what);

// ---- built-in variables ----
struct uint3 {
	unsigned int x, y, z;
};
struct dim3 {
	unsigned int x = 1, y = 1, z = 1;
	dim3() = default;
	dim3(unsigned int a, unsigned int b = 1, unsigned int c = 1) : x(a), y(b), z(c) {}
};
struct alignas(16) uint4 {
	unsigned int x, y, z, w;
};
struct alignas(16) float4 {
	float x, y, z, w;
};
struct alignas(8) uint2 {
	unsigned int x, y;
};
struct alignas(8) float2 {
	float x, y;
};
struct alignas(16) int4 {
	int x, y, z, w;
};

inline thread_local uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim, gridDim;
constexpr int warpSize = 32;

// ---- bit casts and 16-bit types ----
inline unsigned int __float_as_uint(float f) { unsigned int u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int u; std::memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned int pb_emu_f32_bits(float f) { return __float_as_uint(f); }

// IEEE binary16 through the compiler's _Float16 (conversions round to
// nearest even, as cvt.rn.f16.f32).
inline unsigned short pb_emu_f32_to_f16(float f) {
	_Float16 h = (_Float16)f;
	unsigned short u;
	std::memcpy(&u, &h, 2);
	return u;
}
inline float pb_emu_f16_to_f32(unsigned short u) {
	_Float16 h;
	std::memcpy(&h, &u, 2);
	return (float)h;
}
// bfloat16: the top half of a float32, rounded to nearest even, NaN quiet.
inline unsigned short pb_emu_f32_to_bf16(float f) {
	unsigned int u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (unsigned short)(u >> 16);
}
inline float pb_emu_bf16_to_f32(unsigned short u) { return __uint_as_float((unsigned int)u << 16); }

struct __half {
	unsigned short x;
};
struct __nv_bfloat16 {
	unsigned short x;
};
inline __half __float2half_rn(float f) { return __half{pb_emu_f32_to_f16(f)}; }
inline __half __float2half(float f) { return __float2half_rn(f); }
inline float __half2float(__half h) { return pb_emu_f16_to_f32(h.x); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16{pb_emu_f32_to_bf16(f)}; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return pb_emu_bf16_to_f32(h.x); }
inline unsigned short __half_as_ushort(__half h) { return h.x; }
inline __half __ushort_as_half(unsigned short u) { return __half{u}; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16{u}; }

// ---- math (single precision from the host's libm) ----
// expf, tanhf, sqrtf, fmaxf, fminf, exp2f, logf, fabsf, pow, sincos: the
// C library's, as declared by <cmath>.
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
template <typename T> inline T __ldg(const T* p) { return *p; }

// CUDA's min and max overloads (integer and floating; a mixed signed and
// unsigned pair compares as unsigned, as CUDA's do).
#define PB_EMU_MINMAX(T)                                   \
	inline T min(T a, T b) { return b < a ? b : a; }       \
	inline T max(T a, T b) { return a < b ? b : a; }
PB_EMU_MINMAX(int)
PB_EMU_MINMAX(unsigned int)
PB_EMU_MINMAX(long long)
PB_EMU_MINMAX(unsigned long long)
#undef PB_EMU_MINMAX
inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline void sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
// sincos(double) is glibc's.

// ---- failure and the watchdog ----
inline std::atomic<unsigned long long> pb_emu_progress{0};

[[noreturn]] inline void pb_emu_fail(const char* what) {
	std::fprintf(stderr, "hostemu: block (%u,%u,%u) thread (%u,%u,%u): %s\n", blockIdx.x, blockIdx.y, blockIdx.z,
		threadIdx.x, threadIdx.y, threadIdx.z, what);
	std::fflush(stderr);
	std::_Exit(3);
}

// ---- barriers of the live threads ----
//
// A barrier releases when every live member has arrived; a member that
// returns from the kernel leaves it (drop). Generations tell one round
// from the next.
struct pb_emu_barrier {
	std::mutex mu;
	std::condition_variable cv;
	int expected = 0, arrived = 0;
	unsigned long long gen = 0;

	void reset(int n) {
		std::lock_guard<std::mutex> l(mu);
		expected = n;
		arrived = 0;
	}
	void release_locked() {
		arrived = 0;
		gen++;
		pb_emu_progress.fetch_add(1, std::memory_order_relaxed);
		cv.notify_all();
	}
	void wait() {
		std::unique_lock<std::mutex> l(mu);
		const unsigned long long g = gen;
		if (++arrived == expected) {
			release_locked();
			return;
		}
		cv.wait(l, [&] { return gen != g; });
	}
	void drop() {
		std::lock_guard<std::mutex> l(mu);
		expected--;
		if (arrived > 0 && arrived == expected) release_locked();
	}
};

// One warp: its barrier and one slot of 16 words per lane for exchanges,
// tagged with the round it was written in.
struct pb_emu_warp {
	pb_emu_barrier bar;
	unsigned int slot[32][16];
	unsigned long long tag[32];
	unsigned long long round = 0; // advanced by each lane's sync (read under the barrier's lock)
};

struct pb_emu_block_state {
	pb_emu_barrier bar;
	std::vector<pb_emu_warp> warps;
	unsigned char* dyn = nullptr; // dynamic shared memory
	size_t dyn_bytes = 0;
};
inline pb_emu_block_state* pb_emu_block = nullptr;

inline thread_local int pb_emu_tid = 0;            // linear thread index in the block
inline thread_local unsigned long long pb_emu_my_round = 0; // warp rounds this lane has passed

inline int pb_emu_lane() { return pb_emu_tid & 31; }
inline pb_emu_warp& pb_emu_my_warp() { return pb_emu_block->warps[pb_emu_tid >> 5]; }

// The slot this lane writes before pb_emu_warp_sync; tagged for the round.
inline unsigned int* pb_emu_warp_slot() {
	pb_emu_warp& w = pb_emu_my_warp();
	w.tag[pb_emu_lane()] = pb_emu_my_round + 1;
	return w.slot[pb_emu_lane()];
}
// Another lane's slot after pb_emu_warp_sync; that lane must have written it this round.
inline const unsigned int* pb_emu_warp_slot_of(int lane) {
	pb_emu_warp& w = pb_emu_my_warp();
	if (lane < 0 || lane >= 32 || w.tag[lane] != pb_emu_my_round) {
		char msg[160];
		std::snprintf(msg, sizeof msg, "warp exchange reads lane %d, which did not take part (diverged, exited or outside the block)", lane);
		pb_emu_fail(msg);
	}
	return w.slot[lane];
}
inline void pb_emu_warp_sync() {
	pb_emu_my_warp().bar.wait();
	pb_emu_my_round++;
}

inline void __syncthreads() { pb_emu_block->bar.wait(); }
inline void __syncwarp(unsigned int = 0xffffffffu) {
	pb_emu_warp_slot();
	pb_emu_warp_sync();
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- warp shuffles (CUDA semantics: a source outside the lane's segment
// of width lanes returns the lane's own value) ----
template <typename T> inline T pb_emu_shfl(T v, int src_lane, bool own) {
	static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
	unsigned int* s = pb_emu_warp_slot();
	std::memcpy(s, &v, sizeof(T));
	pb_emu_warp_sync();
	T out = v;
	if (!own) std::memcpy(&out, pb_emu_warp_slot_of(src_lane), sizeof(T));
	pb_emu_warp_sync(); // every lane has read before a slot is written again
	return out;
}
template <typename T> inline T __shfl_sync(unsigned int, T v, int src, int width = 32) {
	const int lane = pb_emu_lane(), base = lane & ~(width - 1);
	return pb_emu_shfl(v, base + (src & (width - 1)), false);
}
template <typename T> inline T __shfl_xor_sync(unsigned int, T v, int mask, int width = 32) {
	const int lane = pb_emu_lane(), src = lane ^ mask;
	return pb_emu_shfl(v, src, src >= (lane & ~(width - 1)) + width);
}
template <typename T> inline T __shfl_down_sync(unsigned int, T v, unsigned int delta, int width = 32) {
	const int lane = pb_emu_lane(), src = lane + (int)delta;
	return pb_emu_shfl(v, src, src >= (lane & ~(width - 1)) + width);
}
template <typename T> inline T __shfl_up_sync(unsigned int, T v, unsigned int delta, int width = 32) {
	const int lane = pb_emu_lane(), src = lane - (int)delta;
	return pb_emu_shfl(v, src, src < (lane & ~(width - 1)));
}

// ---- atomics (on the host's memory model: sequentially consistent) ----
inline int atomicCAS(int* p, int cmp, int val) {
	__atomic_compare_exchange_n(p, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return cmp;
}
inline unsigned int atomicCAS(unsigned int* p, unsigned int cmp, unsigned int val) {
	__atomic_compare_exchange_n(p, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return cmp;
}
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float atomicAdd(float* p, float v) {
	unsigned int* u = (unsigned int*)p;
	unsigned int old = __atomic_load_n(u, __ATOMIC_SEQ_CST);
	while (!__atomic_compare_exchange_n(u, &old, __float_as_uint(__uint_as_float(old) + v), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
	}
	return __uint_as_float(old);
}
inline int atomicMax(int* p, int v) {
	int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
	while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
	}
	return old;
}
inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }

// ---- shared-memory checks and cp.async queues (pb_tc.cuh) ----
// pb_emu_check_shared stops an access of n bytes at p that starts inside
// the dynamic shared memory and runs past its end. (Static __shared__
// storage is ordinary static memory here and cannot be told from global
// memory.)
inline void pb_emu_check_shared(const void* p, size_t n, const char* what) {
	const unsigned char* c = (const unsigned char*)p;
	if (pb_emu_block == nullptr || c < pb_emu_block->dyn || c >= pb_emu_block->dyn + pb_emu_block->dyn_bytes + 1024) return;
	if (c + n > pb_emu_block->dyn + pb_emu_block->dyn_bytes) {
		char msg[200];
		std::snprintf(msg, sizeof msg, "%s: %zu bytes at offset %td run past the %zu bytes of dynamic shared memory", what, n,
			c - pb_emu_block->dyn, pb_emu_block->dyn_bytes);
		pb_emu_fail(msg);
	}
}

struct pb_emu_copy {
	void* dst;
	const void* src;
	int bytes;
};
inline thread_local std::vector<std::vector<pb_emu_copy>> pb_emu_groups; // committed groups, oldest first
inline thread_local std::vector<pb_emu_copy> pb_emu_open;               // issued, not yet committed

inline void pb_emu_cp_async_queue(void* dst, const void* src, int bytes) { pb_emu_open.push_back({dst, src, bytes}); }
inline void pb_emu_cp_async_commit() {
	pb_emu_groups.push_back(pb_emu_open);
	pb_emu_open.clear();
}
inline void pb_emu_do_copies(const std::vector<pb_emu_copy>& g) {
	for (const pb_emu_copy& c : g) {
		std::memcpy(c.dst, c.src, (size_t)c.bytes);
		std::memset((unsigned char*)c.dst + c.bytes, 0, (size_t)(16 - c.bytes));
	}
}
inline void pb_emu_cp_async_wait(int n) {
	while ((int)pb_emu_groups.size() > n) {
		pb_emu_do_copies(pb_emu_groups.front());
		pb_emu_groups.erase(pb_emu_groups.begin());
	}
}

// ---- static shared memory: every __shared__ variable lies in the section
// pb_emu_shared, whose bounds the linker names; it is filled with 0xff
// bytes before each block, as dynamic shared memory is. ----
extern "C" unsigned char __start_pb_emu_shared[] __attribute__((weak));
extern "C" unsigned char __stop_pb_emu_shared[] __attribute__((weak));
inline void pb_emu_poison_static_shared() {
	if (__start_pb_emu_shared != nullptr && __stop_pb_emu_shared > __start_pb_emu_shared) {
		std::memset(__start_pb_emu_shared, 0xff, (size_t)(__stop_pb_emu_shared - __start_pb_emu_shared));
	}
}

// ---- dynamic shared memory ----
inline unsigned char* pb_emu_dynamic_smem() { return pb_emu_block->dyn; }

// ---- launching ----

// pb_emu_launch runs kernel() over grid × block, blocks in order, with
// dyn_bytes of dynamic shared memory.
inline void pb_emu_launch(dim3 grid, dim3 block, size_t dyn_bytes, const std::function<void()>& kernel) {
	const unsigned long long nthreads = (unsigned long long)block.x * block.y * block.z;
	if (nthreads == 0 || nthreads > 1024 || block.z > 64) pb_emu_fail("launch: block of 0 or more than 1024 threads (or z > 64)");
	if (grid.y > 65535 || grid.z > 65535 || grid.x == 0 || grid.y == 0 || grid.z == 0) pb_emu_fail("launch: grid beyond 2^31−1 × 65535 × 65535 or empty");
	gridDim = grid;
	blockDim = block;
	pb_emu_block_state st;
	st.warps = std::vector<pb_emu_warp>((nthreads + 31) / 32);
	std::vector<unsigned char> dyn(dyn_bytes + 16);
	st.dyn = dyn.data() + (16 - (reinterpret_cast<uintptr_t>(dyn.data()) % 16)) % 16;
	st.dyn_bytes = dyn_bytes;
	pb_emu_block = &st;

	pb_emu_barrier start, end; // the team and the launching thread
	start.reset((int)nthreads + 1);
	end.reset((int)nthreads + 1);
	bool done = false;
	struct arg {
		int tid;
		pb_emu_barrier *start, *end;
		bool* done;
		const std::function<void()>* kernel;
	};
	std::vector<arg> args(nthreads);
	std::vector<pthread_t> threads(nthreads);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	auto body = [](void* p) -> void* {
		arg* a = (arg*)p;
		pb_emu_tid = a->tid;
		threadIdx.x = a->tid % blockDim.x;
		threadIdx.y = (a->tid / blockDim.x) % blockDim.y;
		threadIdx.z = a->tid / (blockDim.x * blockDim.y);
		for (;;) {
			a->start->wait();
			if (*a->done) return nullptr;
			pb_emu_my_round = 0;
			(*a->kernel)();
			pb_emu_cp_async_commit();
			pb_emu_cp_async_wait(0); // copies still in flight land before the block ends
			pb_emu_block->bar.drop();
			pb_emu_my_warp().bar.drop();
			pb_emu_progress.fetch_add(1, std::memory_order_relaxed);
			a->end->wait();
		}
	};
	for (unsigned long long t = 0; t < nthreads; t++) {
		args[t] = arg{(int)t, &start, &end, &done, &kernel};
		if (pthread_create(&threads[t], &attr, body, &args[t]) != 0) pb_emu_fail("launch: cannot create a thread");
	}
	pthread_attr_destroy(&attr);

	// The watchdog: a launch whose barriers stop moving for
	// PB_EMU_WATCHDOG_S seconds (default 60) is a deadlock.
	std::atomic<bool> finished{false};
	int limit = 60;
	if (const char* w = std::getenv("PB_EMU_WATCHDOG_S")) limit = std::atoi(w);
	std::thread dog([&] {
		unsigned long long last = pb_emu_progress.load();
		int still = 0;
		while (!finished.load()) {
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			const unsigned long long now = pb_emu_progress.load();
			if (now != last) {
				last = now;
				still = 0;
			} else if (++still > 10 * limit) {
				std::fprintf(stderr, "hostemu: deadlock: no barrier moved for %d s in block (%u,%u,%u) of grid (%u,%u,%u), block (%u,%u,%u) "
					"(a __syncthreads or warp operation that not every live thread reaches)\n",
					limit, blockIdx.x, blockIdx.y, blockIdx.z, grid.x, grid.y, grid.z, block.x, block.y, block.z);
				std::fflush(stderr);
				std::_Exit(3);
			}
		}
	});
	for (unsigned int z = 0; z < grid.z; z++) {
		for (unsigned int y = 0; y < grid.y; y++) {
			for (unsigned int x = 0; x < grid.x; x++) {
				blockIdx = uint3{x, y, z};
				st.bar.reset((int)nthreads);
				for (size_t w = 0; w < st.warps.size(); w++) {
					const int lanes = (int)std::min<unsigned long long>(32, nthreads - 32 * w);
					st.warps[w].bar.reset(lanes);
					for (int l = 0; l < 32; l++) st.warps[w].tag[l] = ~0ull;
				}
				std::memset(st.dyn, 0xff, dyn_bytes);
				pb_emu_poison_static_shared();
				start.wait();
				end.wait();
			}
		}
	}
	done = true;
	start.wait();
	for (pthread_t& t : threads) pthread_join(t, nullptr);
	finished = true;
	dog.join();
	pb_emu_block = nullptr;
}

#endif // PB_HOSTEMU_PRELUDE_H
