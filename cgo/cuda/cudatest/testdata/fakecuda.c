// A fake libcuda.so.1 for partbench's binding tests: the driver entry points
// partbench calls, with host-memory behaviour, built by the tests with gcc.
// It declares its own types, as the binding does.
//
//   - Device memory is host memory (malloc), so copies, memsets and the
//     "fill" kernel really move bytes; cuMemAlloc_v2 fails with
//     CUDA_ERROR_INVALID_CONTEXT unless a context is current on the
//     calling thread (which proves the binding's pinning discipline), and
//     with CUDA_ERROR_OUT_OF_MEMORY above 1 TiB.
//   - Kernels: cuModuleLoadData accepts images that start with "FAKE";
//     a function name is "<op>_<signature>": op "trace" records its
//     arguments, "fill" writes value u into n uint32 at p (signature p_u_i),
//     "fail" makes the next cuStreamSynchronize fail with
//     CUDA_ERROR_LAUNCH_FAILED; any other kernel (partbench's own) only
//     counts and its parameters are not read. Signature letters
//     give each parameter's C type: p pointer, i int, u unsigned, f float,
//     d double, l long long. A launch asking for more dynamic shared
//     memory than its function allows (48 KiB until cuFuncSetAttribute
//     raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, at most to
//     the device's opt-in 232448 bytes) fails with CUDA_ERROR_INVALID_VALUE.
//   - Stream capture records launches instead of running them; launching
//     the instantiated graph runs them.
//   - cuMemGetInfo_v2: 80 GiB in total, of which 1 GiB and the live
//     cuMemAlloc_v2 allocations (their exact bytes) are used.
//   - Pinned host memory (cuMemHostAlloc) is malloc'd and counted;
//     cuMemFreeHost refuses a pointer cuMemHostAlloc did not return with
//     CUDA_ERROR_INVALID_VALUE. An async copy between the device and pinned
//     memory is queued on its stream and done when the stream is
//     synchronized (cuStreamSynchronize, cuCtxSynchronize), or before the
//     next work on that stream runs, as DMA would be: a reader that skips
//     the synchronization sees the old bytes. Copies from or to pageable
//     memory are done at once (the real driver stages them synchronously).
//   - Persisting L2: cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE) caps
//     the set-aside at the device's maximum (attribute 108) and
//     cuCtxGetLimit reads it back; cuStreamSetAttribute takes only the
//     access-policy window (attribute 1), refuses a window larger than
//     attribute 109, a hit ratio outside [0, 1] or a persisting miss
//     property, and keeps it on the stream (the trace shows what crossed).
//   - cuGetErrorString(TRACE) returns a trace of the last call's arguments,
//     cuGetErrorName(TRACE) the launch/graph counters, so tests see what
//     crossed the ABI; "syncs" counts the host waits (cuStreamSynchronize,
//     cuCtxSynchronize, cuEventSynchronize).
//   - Event clock: every cuEventRecord is 0.25 ms after the last; with
//     FAKE_KERNEL_MS set in the environment, every kernel that runs (at its
//     launch, or in a launched graph; copies and memsets do not) also moves the clock by that many
//     milliseconds, so events around work time it.
// Build variants: -DFAKE_OLD drops cuEventElapsedTime_v2 and the graph
// calls; -DFAKE_NO_ALLOC drops cuMemAlloc_v2; -DFAKE_NO_DEVICE makes cuInit
// fail with CUDA_ERROR_NO_DEVICE; -DFAKE_BAD_GRAPH makes every
// instantiation fail with CUDA_ERROR_NOT_SUPPORTED; -DFAKE_NO_L2 drops the
// persisting-L2 controls.
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
	OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NO_DEVICE = 100, INVALID_DEVICE = 101,
	INVALID_IMAGE = 200, INVALID_CONTEXT = 201, INVALID_HANDLE = 400, NOT_FOUND = 500, NOT_READY = 600,
	LAUNCH_FAILED = 719, NOT_SUPPORTED = 801, CAPTURE_UNSUPPORTED = 900, TRACE = 0x7ffffff0
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; // guards trace, counters and the counts
static char trace[1024], traceOut[1024];
static char counters[256];
static _Thread_local void* current;
static int launches, graphLaunches, captured, hostAllocs, hostFrees;
static int syncs;
static size_t liveBytes; // cuMemAlloc_v2's allocations not yet freed
static double clockMS;
static void kernelTime(void);
static void drain(void* st);
static void drainAll(void);
static int pendingFailure;

static void note(const char* fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&mu);
	vsnprintf(trace, sizeof trace, fmt, ap);
	pthread_mutex_unlock(&mu);
	va_end(ap);
}

static void count(int* c) {
	pthread_mutex_lock(&mu);
	(*c)++;
	pthread_mutex_unlock(&mu);
}

CUresult cuGetErrorString(CUresult r, const char** s) {
	switch (r) {
	case OK: *s = "fake: no error"; return OK;
	case OUT_OF_MEMORY: *s = "fake: out of memory"; return OK;
	case INVALID_CONTEXT: *s = "fake: invalid device context"; return OK;
	case LAUNCH_FAILED: *s = "fake: unspecified launch failure"; return OK;
	case NO_DEVICE: *s = "fake: no CUDA-capable device is detected"; return OK;
	case TRACE:
		pthread_mutex_lock(&mu);
		memcpy(traceOut, trace, sizeof trace);
		pthread_mutex_unlock(&mu);
		*s = traceOut;
		return OK;
	}
	*s = NULL;
	return INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult r, const char** s) {
	switch (r) {
	case OK: *s = "CUDA_SUCCESS"; return OK;
	case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
	case TRACE:
		pthread_mutex_lock(&mu);
		snprintf(counters, sizeof counters, "launches=%d graphLaunches=%d captured=%d hostAllocs=%d hostFrees=%d syncs=%d",
			launches, graphLaunches, captured, hostAllocs, hostFrees, syncs);
		pthread_mutex_unlock(&mu);
		*s = counters;
		return OK;
	}
	*s = NULL;
	return INVALID_VALUE;
}

CUresult cuInit(unsigned int flags) {
#ifdef FAKE_NO_DEVICE
	(void)flags;
	return NO_DEVICE;
#else
	return flags == 0 ? OK : INVALID_VALUE;
#endif
}

CUresult cuDriverGetVersion(int* v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int* n) { *n = 2; return OK; }

// Device handles are ordinal + 10, so a test sees the handle crossed back.
CUresult cuDeviceGet(int* dev, int ordinal) {
	if (ordinal < 0 || ordinal >= 2) return INVALID_DEVICE;
	*dev = ordinal + 10;
	return OK;
}

static int ordinalOf(int dev) { return dev >= 10 && dev < 12 ? dev - 10 : -1; }

CUresult cuDeviceGetName(char* name, int len, int dev) {
	if (ordinalOf(dev) < 0) return INVALID_DEVICE;
	snprintf(name, (size_t)len, "Fake H100 %d", ordinalOf(dev));
	return OK;
}

CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
	if (ordinalOf(dev) < 0) return INVALID_DEVICE;
	switch (attr) {
	case 1: *v = 1024; return OK;            // max threads per block
	case 10: *v = 32; return OK;             // warp size
	case 16: *v = 132; return OK;            // SMs
	case 33: *v = 0x18 + ordinalOf(dev); return OK;
	case 37: *v = 5120; return OK;           // bus width
	case 38: *v = 50 * 1024 * 1024; return OK; // L2
	case 75: *v = 9; return OK;
	case 76: *v = 0; return OK;
	case 81: *v = 233472; return OK;
	case 97: *v = 232448; return OK;
	case 108: *v = 78643200; return OK;      // max persisting L2
	case 109: *v = 134213632; return OK;     // max access-policy window (H100)
	}
	return INVALID_VALUE;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, int dev) {
	if (ordinalOf(dev) < 0) return INVALID_DEVICE;
	*bytes = (size_t)80 << 30;
	return OK;
}

static int retained[2];

CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev) {
	int o = ordinalOf(dev);
	if (o < 0) return INVALID_DEVICE;
	retained[o]++;
	*ctx = (void*)(uintptr_t)(0xC0DE00 + o);
	return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
	int o = ordinalOf(dev);
	if (o < 0 || retained[o] == 0) return INVALID_CONTEXT;
	retained[o]--;
	return OK;
}

CUresult cuCtxSetCurrent(void* ctx) { current = ctx; return OK; }
CUresult cuCtxGetCurrent(void** ctx) { *ctx = current; return OK; }
CUresult cuCtxSynchronize(void) {
	if (current == NULL) return INVALID_CONTEXT;
	count(&syncs);
	drainAll();
	return OK;
}

#ifndef FAKE_NO_ALLOC
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
	if (current == NULL) return INVALID_CONTEXT;
	if (bytes == 0) return INVALID_VALUE;
	if (bytes > ((size_t)1 << 40)) return OUT_OF_MEMORY;
	void* h = NULL;
	// A 256-byte header before the allocation keeps its size for cuMemFree.
	if (posix_memalign(&h, 256, bytes + 256) != 0) return OUT_OF_MEMORY;
	*(size_t*)h = bytes;
	void* m = (char*)h + 256;
	memset(m, 0xAB, bytes < 4096 ? bytes : 4096); // visible garbage, cheap for large allocations
	pthread_mutex_lock(&mu);
	liveBytes += bytes;
	pthread_mutex_unlock(&mu);
	*p = (CUdeviceptr)(uintptr_t)m;
	note("cuMemAlloc_v2(bytes=%zu)", bytes);
	return OK;
}
#endif

CUresult cuMemFree_v2(CUdeviceptr p) {
	if (current == NULL) return INVALID_CONTEXT;
	if (p == 0) return OK;
	char* h = (char*)(uintptr_t)p - 256;
	pthread_mutex_lock(&mu);
	liveBytes -= *(size_t*)h;
	pthread_mutex_unlock(&mu);
	free(h);
	return OK;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
	if (current == NULL) return INVALID_CONTEXT;
	pthread_mutex_lock(&mu);
	*free = ((size_t)79 << 30) - liveBytes; // 1 GiB taken by the context
	pthread_mutex_unlock(&mu);
	*total = (size_t)80 << 30;
	return OK;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) { memcpy((void*)(uintptr_t)dst, src, n); return OK; }
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) { memcpy(dst, (void*)(uintptr_t)src, n); return OK; }

// Async work runs at once, unless the stream is capturing (then it is an error
// for copies, which partbench never captures, and recorded for launches).
#define MAX_NODES 4096
struct fakeLaunch { char name[64]; unsigned gx, gy, gz, bx, by, bz; uint64_t args[8]; int nargs; };
struct fakeGraph { struct fakeLaunch nodes[MAX_NODES]; int n; };
struct fakeWindow { uint64_t base; size_t bytes; float hitRatio; int hitProp, missProp; };
struct fakeStream { int capturing, mode, flags; struct fakeGraph* g; struct fakeWindow window; };

static int capturing(void* st) { return st != NULL && ((struct fakeStream*)st)->capturing; }

// Pinned allocations, and the copies queued on streams until they drain.
#define MAX_PINNED 1024
#define MAX_QUEUED 4096
static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER; // guards the two tables
static struct { char* p; size_t n; } pinned[MAX_PINNED];
static struct { void* st; void* dst; const void* src; size_t n; } queued[MAX_QUEUED];
static int nqueued;

CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
	if (current == NULL) return INVALID_CONTEXT;
	if (bytes == 0 || (flags & ~0x07u) != 0) return INVALID_VALUE;
	char* m = malloc(bytes);
	if (m == NULL) return OUT_OF_MEMORY;
	memset(m, 0xCD, bytes < 4096 ? bytes : 4096); // visible garbage
	pthread_mutex_lock(&pmu);
	int slot = -1;
	for (int i = 0; i < MAX_PINNED && slot < 0; i++)
		if (pinned[i].p == NULL) slot = i;
	if (slot >= 0) { pinned[slot].p = m; pinned[slot].n = bytes; }
	pthread_mutex_unlock(&pmu);
	if (slot < 0) { free(m); return OUT_OF_MEMORY; }
	*pp = m;
	count(&hostAllocs);
	note("cuMemHostAlloc(bytes=%zu, flags=%u)", bytes, flags);
	return OK;
}

CUresult cuMemFreeHost(void* p) {
	pthread_mutex_lock(&pmu);
	int slot = -1;
	for (int i = 0; i < MAX_PINNED && slot < 0; i++)
		if (p != NULL && pinned[i].p == p) slot = i;
	if (slot >= 0) pinned[slot].p = NULL;
	pthread_mutex_unlock(&pmu);
	if (slot < 0) return INVALID_VALUE; // not a pointer cuMemHostAlloc returned (or freed twice)
	free(p);
	count(&hostFrees);
	return OK;
}

// isPinned says whether [p, p+n) lies inside one pinned allocation.
static int isPinned(const void* p, size_t n) {
	const char* c = p;
	int in = 0;
	pthread_mutex_lock(&pmu);
	for (int i = 0; i < MAX_PINNED && !in; i++)
		if (pinned[i].p != NULL && c >= pinned[i].p && c + n <= pinned[i].p + pinned[i].n) in = 1;
	pthread_mutex_unlock(&pmu);
	return in;
}

// drainWhere runs, in order, the queued copies of stream st (all = 1: of
// every stream).
static void drainWhere(void* st, int all) {
	pthread_mutex_lock(&pmu);
	int kept = 0;
	for (int i = 0; i < nqueued; i++) {
		if (all || queued[i].st == st) memcpy(queued[i].dst, queued[i].src, queued[i].n);
		else queued[kept++] = queued[i];
	}
	nqueued = kept;
	pthread_mutex_unlock(&pmu);
}
static void drain(void* st) { drainWhere(st, 0); }
static void drainAll(void) { drainWhere(NULL, 1); }

// copyAsync queues a copy whose host side is pinned, else copies at once.
static CUresult copyAsync(void* dst, const void* src, size_t n, const void* host, void* st) {
	if (capturing(st)) return CAPTURE_UNSUPPORTED;
	drain(st); // stream order: what was queued before runs first
	if (n == 0 || !isPinned(host, n)) {
		memcpy(dst, src, n);
		return OK;
	}
	pthread_mutex_lock(&pmu);
	int ok = nqueued < MAX_QUEUED;
	if (ok) {
		queued[nqueued].st = st; queued[nqueued].dst = dst; queued[nqueued].src = src; queued[nqueued].n = n;
		nqueued++;
	}
	pthread_mutex_unlock(&pmu);
	if (!ok) memcpy(dst, src, n);
	return OK;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, void* st) {
	return copyAsync((void*)(uintptr_t)dst, src, n, src, st);
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, void* st) {
	return copyAsync(dst, (const void*)(uintptr_t)src, n, dst, st);
}
static void run(const struct fakeLaunch* l);

// Device-to-device copies are captured as graph nodes, as in CUDA.
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void* st) {
	struct fakeLaunch l = {0};
	snprintf(l.name, sizeof l.name, "memcpy_dtod");
	l.args[0] = dst; l.args[1] = src; l.args[2] = n; l.nargs = 3;
	if (capturing(st)) {
		struct fakeGraph* g = ((struct fakeStream*)st)->g;
		if (g->n >= MAX_NODES) return INVALID_VALUE;
		g->nodes[g->n++] = l;
		count(&captured);
		return OK;
	}
	drain(st);
	run(&l);
	return OK;
}
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) { memset((void*)(uintptr_t)dst, v, n); return OK; }
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void* st) {
	if (capturing(st)) return CAPTURE_UNSUPPORTED;
	drain(st);
	memset((void*)(uintptr_t)dst, v, n);
	return OK;
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, void* st) {
	if (capturing(st)) return CAPTURE_UNSUPPORTED; // partbench sets positions outside graphs
	drain(st);
	unsigned int* p = (unsigned int*)(uintptr_t)dst;
	for (size_t i = 0; i < n; i++) p[i] = v;
	note("cuMemsetD32Async(v=%u, n=%zu)", v, n);
	return OK;
}

CUresult cuStreamCreate(void** st, unsigned int flags) {
	if (current == NULL) return INVALID_CONTEXT;
	struct fakeStream* s = calloc(1, sizeof *s);
	s->flags = (int)flags;
	*st = s;
	note("cuStreamCreate(flags=%u)", flags);
	return OK;
}
CUresult cuStreamDestroy_v2(void* st) { drain(st); free(st); return OK; }
CUresult cuStreamSynchronize(void* st) {
	count(&syncs);
	drain(st);
	if (pendingFailure) { pendingFailure = 0; return LAUNCH_FAILED; }
	return OK;
}

struct fakeEvent { double t; int recorded; };
CUresult cuEventCreate(void** ev, unsigned int flags) {
	(void)flags;
	*ev = calloc(1, sizeof(struct fakeEvent));
	return OK;
}
CUresult cuEventDestroy_v2(void* ev) { free(ev); return OK; }
CUresult cuEventRecord(void* ev, void* st) {
	drain(st);
	struct fakeEvent* e = ev;
	clockMS += 0.25; // every record is a quarter millisecond after the last
	e->t = clockMS;
	e->recorded = 1;
	return OK;
}
CUresult cuEventSynchronize(void* ev) { count(&syncs); return ((struct fakeEvent*)ev)->recorded ? OK : INVALID_HANDLE; }
// Recorded work is done at once, so a recorded event is complete.
CUresult cuEventQuery(void* ev) { return ((struct fakeEvent*)ev)->recorded ? OK : NOT_READY; }
static CUresult elapsed(float* ms, void* a, void* b) {
	struct fakeEvent *s = a, *e = b;
	if (!s->recorded || !e->recorded) return INVALID_HANDLE;
	*ms = (float)(e->t - s->t);
	return OK;
}
CUresult cuEventElapsedTime(float* ms, void* a, void* b) { note("cuEventElapsedTime"); return elapsed(ms, a, b); }
#ifndef FAKE_OLD
CUresult cuEventElapsedTime_v2(float* ms, void* a, void* b) { note("cuEventElapsedTime_v2"); return elapsed(ms, a, b); }
#endif

CUresult cuModuleLoadData(void** mod, const void* image) {
	if (current == NULL) return INVALID_CONTEXT;
	if (strncmp((const char*)image, "FAKE", 4) != 0) return INVALID_IMAGE;
	*mod = strdup((const char*)image);
	note("cuModuleLoadData(%.60s)", (const char*)image);
	return OK;
}
CUresult cuModuleUnload(void* mod) { free(mod); return OK; }
CUresult cuModuleGetFunction(void** fn, void* mod, const char* name) {
	(void)mod;
	if (strcmp(name, "missing") == 0) return NOT_FOUND;
	*fn = strdup(name);
	return OK;
}

// Function attributes (cuFuncSetAttribute), per function handle as in the
// real driver: the dynamic shared memory a launch may ask for is 48 KiB
// until CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8) raises it, at
// most to the device's opt-in limit (attribute 97: 232448 bytes) minus
// the static shared memory (none in the fake's kernels).
#define DEFAULT_DYNAMIC_SHARED (48 * 1024)
#define OPTIN_SHARED 232448
#define MAX_FUNCS 256
static struct { void* fn; int maxDynamicShared; } funcAttrs[MAX_FUNCS];
static int nFuncAttrs;

static int maxDynamicShared(void* fn) {
	int v = DEFAULT_DYNAMIC_SHARED;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nFuncAttrs; i++) {
		if (funcAttrs[i].fn == fn) v = funcAttrs[i].maxDynamicShared;
	}
	pthread_mutex_unlock(&mu);
	return v;
}

CUresult cuFuncSetAttribute(void* fn, int attr, int v) {
	if (fn == NULL) return INVALID_HANDLE;
	note("cuFuncSetAttribute(%s, %d, %d)", (const char*)fn, attr, v);
	if (attr != 8) return INVALID_VALUE; // the fake knows only the dynamic shared memory limit
	if (v < 0 || v > OPTIN_SHARED) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int i = 0;
	while (i < nFuncAttrs && funcAttrs[i].fn != fn) i++;
	if (i == nFuncAttrs) {
		if (nFuncAttrs == MAX_FUNCS) {
			pthread_mutex_unlock(&mu);
			return OUT_OF_MEMORY;
		}
		funcAttrs[nFuncAttrs++].fn = fn;
	}
	funcAttrs[i].maxDynamicShared = v;
	pthread_mutex_unlock(&mu);
	return OK;
}

CUresult cuFuncGetAttribute(int* v, int attr, void* fn) {
	if (fn == NULL) return INVALID_HANDLE;
	switch (attr) {
	case 0: *v = 1024; return OK; // max threads per block
	case 1: *v = 0; return OK;    // static shared memory
	case 3: *v = 0; return OK;    // local memory per thread
	case 4: *v = 32; return OK;   // registers per thread
	case 8: *v = maxDynamicShared(fn); return OK;
	}
	return INVALID_VALUE;
}

// run executes one launch of a known op on host memory.
static void run(const struct fakeLaunch* l) {
	if (strcmp(l->name, "memcpy_dtod") == 0) {
		memmove((void*)(uintptr_t)l->args[0], (void*)(uintptr_t)l->args[1], (size_t)l->args[2]);
	} else if (strncmp(l->name, "fill_", 5) == 0 && l->nargs == 3) {
		unsigned int* p = (unsigned int*)(uintptr_t)l->args[0];
		unsigned int v = (unsigned int)l->args[1];
		int n = (int)(int32_t)l->args[2];
		for (int i = 0; i < n; i++) p[i] = v;
	} else if (strncmp(l->name, "fail_", 5) == 0 || strcmp(l->name, "fail") == 0) {
		pendingFailure = 1;
	}
}

CUresult cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
	unsigned shared, void* st, void** params, void** extra) {
	const char* name = fn;
	if (extra != NULL) return INVALID_VALUE;
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return INVALID_VALUE;
	// More dynamic shared memory than the function allows: the real driver
	// refuses the launch with CUDA_ERROR_INVALID_VALUE.
	if ((int)shared > maxDynamicShared(fn) || shared > OPTIN_SHARED) return INVALID_VALUE;
	struct fakeLaunch l = {0};
	snprintf(l.name, sizeof l.name, "%s", name);
	l.gx = gx; l.gy = gy; l.gz = gz; l.bx = bx; l.by = by; l.bz = bz;
	// Read the parameters the signature names, as the real driver reads
	// sizes from the kernel image.
	// Only the fake's own ops carry a signature; any other kernel (partbench's
	// real ones) is counted, and recorded when capturing.
	const int own = strncmp(name, "trace_", 6) == 0 || strncmp(name, "fill_", 5) == 0 || strncmp(name, "fail_", 5) == 0;
	const char* sig = own ? strchr(name, '_') : NULL;
	char args[512] = "";
	size_t off = 0;
	int i = 0;
	for (const char* c = sig ? sig + 1 : ""; *c && i < 8; c++) {
		if (*c == '_') continue;
		if (params == NULL) return INVALID_VALUE;
		const void* v = params[i];
		uint64_t bits = 0;
		switch (*c) {
		case 'p': bits = *(const uint64_t*)v; off += snprintf(args + off, sizeof args - off, "%s0x%llx", i ? ", " : "", (unsigned long long)bits); break;
		case 'i': bits = (uint32_t)*(const int32_t*)v; off += snprintf(args + off, sizeof args - off, "%s%d", i ? ", " : "", *(const int32_t*)v); break;
		case 'u': bits = *(const uint32_t*)v; off += snprintf(args + off, sizeof args - off, "%s%u", i ? ", " : "", *(const uint32_t*)v); break;
		case 'f': memcpy(&bits, v, 4); off += snprintf(args + off, sizeof args - off, "%s%g", i ? ", " : "", (double)*(const float*)v); break;
		case 'd': bits = *(const uint64_t*)v; off += snprintf(args + off, sizeof args - off, "%s%g", i ? ", " : "", *(const double*)v); break;
		case 'l': bits = *(const uint64_t*)v; off += snprintf(args + off, sizeof args - off, "%s%lld", i ? ", " : "", *(const long long*)v); break;
		default: return INVALID_VALUE;
		}
		l.args[i++] = bits;
	}
	l.nargs = i;
	if (strncmp(name, "trace", 5) == 0 || strncmp(name, "fill", 4) == 0) {
		note("cuLaunchKernel(%s, grid=(%u,%u,%u), block=(%u,%u,%u), shared=%u, args=[%s])",
			name, gx, gy, gz, bx, by, bz, shared, args);
	}
	if (capturing(st)) {
		struct fakeGraph* g = ((struct fakeStream*)st)->g;
		if (g->n >= MAX_NODES) return INVALID_VALUE;
		g->nodes[g->n++] = l;
		count(&captured);
		return OK;
	}
	count(&launches);
	drain(st);
	run(&l);
	kernelTime();
	return OK;
}

#ifndef FAKE_OLD
CUresult cuStreamBeginCapture_v2(void* st, int mode) {
	struct fakeStream* s = st;
	if (s == NULL || s->capturing) return INVALID_VALUE;
	s->capturing = 1;
	s->mode = mode;
	s->g = calloc(1, sizeof *s->g);
	note("cuStreamBeginCapture_v2(mode=%d)", mode);
	return OK;
}
CUresult cuStreamEndCapture(void* st, void** graph) {
	struct fakeStream* s = st;
	if (s == NULL || !s->capturing) return INVALID_VALUE;
	s->capturing = 0;
	*graph = s->g;
	s->g = NULL;
	return OK;
}
CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
#ifdef FAKE_BAD_GRAPH
	(void)exec; (void)graph; (void)flags;
	return NOT_SUPPORTED;
#endif
	if (flags != 0) return INVALID_VALUE;
	struct fakeGraph* g = malloc(sizeof *g);
	memcpy(g, graph, sizeof *g);
	*exec = g;
	note("cuGraphInstantiateWithFlags(nodes=%d)", g->n);
	return OK;
}
CUresult cuGraphLaunch(void* exec, void* st) {
	drain(st);
	struct fakeGraph* g = exec;
	for (int i = 0; i < g->n; i++) {
		run(&g->nodes[i]);
		if (strcmp(g->nodes[i].name, "memcpy_dtod") != 0) kernelTime();
	}
	count(&graphLaunches);
	return OK;
}
CUresult cuGraphExecDestroy(void* exec) { free(exec); return OK; }
CUresult cuGraphDestroy(void* graph) { free(graph); return OK; }
#endif

#ifndef FAKE_NO_L2
static size_t limits[10];

CUresult cuCtxSetLimit(int limit, size_t v) {
	if (current == NULL) return INVALID_CONTEXT;
	if (limit < 0 || limit >= 10) return INVALID_VALUE;
	if (limit == 6 && v > 78643200) v = 78643200; // capped at the device's max persisting L2
	limits[limit] = v;
	note("cuCtxSetLimit(limit=%d, value=%zu)", limit, v);
	return OK;
}

CUresult cuCtxGetLimit(size_t* v, int limit) {
	if (current == NULL) return INVALID_CONTEXT;
	if (limit < 0 || limit >= 10) return INVALID_VALUE;
	*v = limits[limit];
	return OK;
}

CUresult cuCtxResetPersistingL2Cache(void) {
	if (current == NULL) return INVALID_CONTEXT;
	note("cuCtxResetPersistingL2Cache");
	return OK;
}

// The window's layout as cuda.h declares CUaccessPolicyWindow, read from
// the first bytes of the 64-byte CUstreamAttrValue.
struct accessPolicyWindow { void* base_ptr; size_t num_bytes; float hitRatio; int hitProp; int missProp; };

CUresult cuStreamSetAttribute(void* st, int attr, const void* value) {
	if (st == NULL || value == NULL || attr != 1) return INVALID_VALUE;
	const struct accessPolicyWindow* w = value;
	if (w->num_bytes > 134213632 || !(w->hitRatio >= 0 && w->hitRatio <= 1) || w->missProp == 2 ||
		w->hitProp < 0 || w->hitProp > 2 || w->missProp < 0 || w->missProp > 2) return INVALID_VALUE;
	struct fakeStream* fs = st;
	fs->window.base = (uint64_t)(uintptr_t)w->base_ptr;
	fs->window.bytes = w->num_bytes;
	fs->window.hitRatio = w->hitRatio;
	fs->window.hitProp = w->hitProp;
	fs->window.missProp = w->missProp;
	note("cuStreamSetAttribute(attr=%d, base=0x%llx, bytes=%zu, hitRatio=%g, hitProp=%d, missProp=%d)", attr,
		(unsigned long long)fs->window.base, w->num_bytes, (double)w->hitRatio, w->hitProp, w->missProp);
	return OK;
}
#endif

// kernelTime moves the event clock by $FAKE_KERNEL_MS for a kernel that ran.
static void kernelTime(void) {
	const char* v = getenv("FAKE_KERNEL_MS");
	if (v != NULL && *v) clockMS += atof(v);
}
