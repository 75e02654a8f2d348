//go:build cgo

// The static shim: tables of CUDA driver, cuBLAS and NVRTC function pointers
// (filled from dlsym by capi_*.go) and one wrapper per entry point. Every
// prototype below is partbench's own, from the public headers; the comment
// beside each names the header fact it relies on. Wrappers never check for
// a missing pointer: capi_*.go refuses a library that lacks a mandatory
// symbol and checks pb*_has before calling an optional one.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"

typedef void* pbPtr; // CUcontext, CUstream, CUevent, CUmodule, CUfunction, CUgraph, CUgraphExec, cublasHandle_t, nvrtcProgram
typedef unsigned long long pbDevPtr; // CUdeviceptr (LP64)

_Static_assert(sizeof(int) == 4, "CUDA, cuBLAS and NVRTC enums are 4-byte ints");
_Static_assert(sizeof(pbDevPtr) == 8 && sizeof(void*) == 8, "CUdeviceptr matches a 64-bit pointer (LP64)");
_Static_assert(sizeof(uint64_t) == sizeof(pbDevPtr), "device pointers cross as uint64_t");

#define P(x) ((pbPtr)(x))
#define SLOT(id, field) case id: *(void**)(&s->field) = fn; break // POSIX: a data pointer holds a function address

// ---- CUDA driver: cuda.h (CUDA 12.x/13.x), the *_v2 symbols that
// cuda.h's #defines select for 64-bit CUdeviceptr and size_t sizes ----

struct pbCuda {
	pbCUresult (*getErrorString)(pbCUresult, const char**);   // cuGetErrorString(CUresult, const char**)
	pbCUresult (*getErrorName)(pbCUresult, const char**);     // cuGetErrorName(CUresult, const char**)
	pbCUresult (*init)(unsigned int);                          // cuInit(unsigned int Flags)
	pbCUresult (*driverGetVersion)(int*);                      // cuDriverGetVersion(int*)
	pbCUresult (*deviceGet)(int*, int);                        // cuDeviceGet(CUdevice*, int ordinal)
	pbCUresult (*deviceGetCount)(int*);                        // cuDeviceGetCount(int*)
	pbCUresult (*deviceGetName)(char*, int, int);              // cuDeviceGetName(char*, int len, CUdevice)
	pbCUresult (*deviceGetAttribute)(int*, int, int);          // cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice)
	pbCUresult (*deviceTotalMem)(size_t*, int);                // cuDeviceTotalMem_v2(size_t*, CUdevice)
	pbCUresult (*primaryCtxRetain)(pbPtr*, int);               // cuDevicePrimaryCtxRetain(CUcontext*, CUdevice)
	pbCUresult (*primaryCtxRelease)(int);                      // cuDevicePrimaryCtxRelease_v2(CUdevice)
	pbCUresult (*ctxSetCurrent)(pbPtr);                        // cuCtxSetCurrent(CUcontext)
	pbCUresult (*ctxGetCurrent)(pbPtr*);                       // cuCtxGetCurrent(CUcontext*)
	pbCUresult (*ctxSynchronize)(void);                        // cuCtxSynchronize(void)
	pbCUresult (*memAlloc)(pbDevPtr*, size_t);                 // cuMemAlloc_v2(CUdeviceptr*, size_t)
	pbCUresult (*memFree)(pbDevPtr);                           // cuMemFree_v2(CUdeviceptr)
	pbCUresult (*memGetInfo)(size_t*, size_t*);                // cuMemGetInfo_v2(size_t* free, size_t* total)
	pbCUresult (*memcpyHtoD)(pbDevPtr, const void*, size_t);   // cuMemcpyHtoD_v2(CUdeviceptr, const void*, size_t)
	pbCUresult (*memcpyDtoH)(void*, pbDevPtr, size_t);         // cuMemcpyDtoH_v2(void*, CUdeviceptr, size_t)
	pbCUresult (*memcpyHtoDAsync)(pbDevPtr, const void*, size_t, pbPtr); // cuMemcpyHtoDAsync_v2(..., CUstream)
	pbCUresult (*memcpyDtoHAsync)(void*, pbDevPtr, size_t, pbPtr);       // cuMemcpyDtoHAsync_v2(..., CUstream)
	pbCUresult (*memcpyDtoDAsync)(pbDevPtr, pbDevPtr, size_t, pbPtr);    // cuMemcpyDtoDAsync_v2(..., CUstream)
	pbCUresult (*memsetD8)(pbDevPtr, unsigned char, size_t);              // cuMemsetD8_v2(CUdeviceptr, unsigned char, size_t N)
	pbCUresult (*memsetD8Async)(pbDevPtr, unsigned char, size_t, pbPtr);  // cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream)
	pbCUresult (*memsetD32Async)(pbDevPtr, unsigned int, size_t, pbPtr);  // cuMemsetD32Async(CUdeviceptr, unsigned int, size_t N, CUstream)
	pbCUresult (*streamCreate)(pbPtr*, unsigned int);          // cuStreamCreate(CUstream*, unsigned int Flags)
	pbCUresult (*streamDestroy)(pbPtr);                        // cuStreamDestroy_v2(CUstream)
	pbCUresult (*streamSynchronize)(pbPtr);                    // cuStreamSynchronize(CUstream)
	pbCUresult (*eventCreate)(pbPtr*, unsigned int);           // cuEventCreate(CUevent*, unsigned int Flags)
	pbCUresult (*eventDestroy)(pbPtr);                         // cuEventDestroy_v2(CUevent)
	pbCUresult (*eventRecord)(pbPtr, pbPtr);                   // cuEventRecord(CUevent, CUstream)
	pbCUresult (*eventSynchronize)(pbPtr);                     // cuEventSynchronize(CUevent)
	pbCUresult (*eventQuery)(pbPtr);                           // cuEventQuery(CUevent): CUDA_SUCCESS or CUDA_ERROR_NOT_READY
	pbCUresult (*eventElapsedTime)(float*, pbPtr, pbPtr);      // cuEventElapsedTime(float* ms, CUevent start, CUevent end)
	pbCUresult (*eventElapsedTimeV2)(float*, pbPtr, pbPtr);    // cuEventElapsedTime_v2: same signature (CUDA >= 12.8)
	pbCUresult (*moduleLoadData)(pbPtr*, const void*);         // cuModuleLoadData(CUmodule*, const void* image)
	pbCUresult (*moduleUnload)(pbPtr);                         // cuModuleUnload(CUmodule)
	pbCUresult (*moduleGetFunction)(pbPtr*, pbPtr, const char*); // cuModuleGetFunction(CUfunction*, CUmodule, const char*)
	// cuLaunchKernel(CUfunction, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
	//                unsigned int sharedMemBytes, CUstream, void** kernelParams, void** extra)
	pbCUresult (*launchKernel)(pbPtr, unsigned int, unsigned int, unsigned int, unsigned int,
		unsigned int, unsigned int, unsigned int, pbPtr, void**, void**);
	pbCUresult (*streamBeginCapture)(pbPtr, int);              // cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode)
	pbCUresult (*streamEndCapture)(pbPtr, pbPtr*);             // cuStreamEndCapture(CUstream, CUgraph*)
	pbCUresult (*graphInstantiate)(pbPtr*, pbPtr, unsigned long long); // cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long)
	pbCUresult (*graphLaunch)(pbPtr, pbPtr);                   // cuGraphLaunch(CUgraphExec, CUstream)
	pbCUresult (*graphExecDestroy)(pbPtr);                     // cuGraphExecDestroy(CUgraphExec)
	pbCUresult (*graphDestroy)(pbPtr);                         // cuGraphDestroy(CUgraph)
	pbCUresult (*funcSetAttribute)(pbPtr, int, int);           // cuFuncSetAttribute(CUfunction, CUfunction_attribute, int)
	pbCUresult (*funcGetAttribute)(int*, int, pbPtr);          // cuFuncGetAttribute(int*, CUfunction_attribute, CUfunction)
	pbCUresult (*memHostAlloc)(void**, size_t, unsigned int);  // cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags): no _v2 in cuda.h
	pbCUresult (*memFreeHost)(void*);                          // cuMemFreeHost(void* p)
	pbCUresult (*ctxSetLimit)(int, size_t);                    // cuCtxSetLimit(CUlimit, size_t value)
	pbCUresult (*ctxGetLimit)(size_t*, int);                   // cuCtxGetLimit(size_t* pvalue, CUlimit)
	pbCUresult (*streamSetAttribute)(pbPtr, int, const void*); // cuStreamSetAttribute(CUstream, CUstreamAttrID, const CUstreamAttrValue*)
	pbCUresult (*ctxResetPersistingL2)(void);                  // cuCtxResetPersistingL2Cache(void)
};

pbCuda* pbc_new(void) { return calloc(1, sizeof(pbCuda)); }
void pbc_free(pbCuda* s) { free(s); }

void pbc_set(pbCuda* s, int slot, void* fn) {
	switch (slot) {
	SLOT(PBC_GET_ERROR_STRING, getErrorString);
	SLOT(PBC_GET_ERROR_NAME, getErrorName);
	SLOT(PBC_INIT, init);
	SLOT(PBC_DRIVER_GET_VERSION, driverGetVersion);
	SLOT(PBC_DEVICE_GET, deviceGet);
	SLOT(PBC_DEVICE_GET_COUNT, deviceGetCount);
	SLOT(PBC_DEVICE_GET_NAME, deviceGetName);
	SLOT(PBC_DEVICE_GET_ATTRIBUTE, deviceGetAttribute);
	SLOT(PBC_DEVICE_TOTAL_MEM, deviceTotalMem);
	SLOT(PBC_PRIMARY_CTX_RETAIN, primaryCtxRetain);
	SLOT(PBC_PRIMARY_CTX_RELEASE, primaryCtxRelease);
	SLOT(PBC_CTX_SET_CURRENT, ctxSetCurrent);
	SLOT(PBC_CTX_GET_CURRENT, ctxGetCurrent);
	SLOT(PBC_CTX_SYNCHRONIZE, ctxSynchronize);
	SLOT(PBC_MEM_ALLOC, memAlloc);
	SLOT(PBC_MEM_FREE, memFree);
	SLOT(PBC_MEM_GET_INFO, memGetInfo);
	SLOT(PBC_MEMCPY_HTOD, memcpyHtoD);
	SLOT(PBC_MEMCPY_DTOH, memcpyDtoH);
	SLOT(PBC_MEMCPY_HTOD_ASYNC, memcpyHtoDAsync);
	SLOT(PBC_MEMCPY_DTOH_ASYNC, memcpyDtoHAsync);
	SLOT(PBC_MEMCPY_DTOD_ASYNC, memcpyDtoDAsync);
	SLOT(PBC_MEMSET_D8, memsetD8);
	SLOT(PBC_MEMSET_D8_ASYNC, memsetD8Async);
	SLOT(PBC_MEMSET_D32_ASYNC, memsetD32Async);
	SLOT(PBC_STREAM_CREATE, streamCreate);
	SLOT(PBC_STREAM_DESTROY, streamDestroy);
	SLOT(PBC_STREAM_SYNCHRONIZE, streamSynchronize);
	SLOT(PBC_EVENT_CREATE, eventCreate);
	SLOT(PBC_EVENT_DESTROY, eventDestroy);
	SLOT(PBC_EVENT_RECORD, eventRecord);
	SLOT(PBC_EVENT_SYNCHRONIZE, eventSynchronize);
	SLOT(PBC_EVENT_QUERY, eventQuery);
	SLOT(PBC_EVENT_ELAPSED_TIME, eventElapsedTime);
	SLOT(PBC_EVENT_ELAPSED_TIME_V2, eventElapsedTimeV2);
	SLOT(PBC_MODULE_LOAD_DATA, moduleLoadData);
	SLOT(PBC_MODULE_UNLOAD, moduleUnload);
	SLOT(PBC_MODULE_GET_FUNCTION, moduleGetFunction);
	SLOT(PBC_LAUNCH_KERNEL, launchKernel);
	SLOT(PBC_STREAM_BEGIN_CAPTURE, streamBeginCapture);
	SLOT(PBC_STREAM_END_CAPTURE, streamEndCapture);
	SLOT(PBC_GRAPH_INSTANTIATE, graphInstantiate);
	SLOT(PBC_GRAPH_LAUNCH, graphLaunch);
	SLOT(PBC_GRAPH_EXEC_DESTROY, graphExecDestroy);
	SLOT(PBC_GRAPH_DESTROY, graphDestroy);
	SLOT(PBC_FUNC_SET_ATTRIBUTE, funcSetAttribute);
	SLOT(PBC_FUNC_GET_ATTRIBUTE, funcGetAttribute);
	SLOT(PBC_MEM_HOST_ALLOC, memHostAlloc);
	SLOT(PBC_MEM_FREE_HOST, memFreeHost);
	SLOT(PBC_CTX_SET_LIMIT, ctxSetLimit);
	SLOT(PBC_CTX_GET_LIMIT, ctxGetLimit);
	SLOT(PBC_STREAM_SET_ATTRIBUTE, streamSetAttribute);
	SLOT(PBC_CTX_RESET_PERSISTING_L2, ctxResetPersistingL2);
	}
}

int pbc_has(const pbCuda* s, int slot) {
	switch (slot) {
	case PBC_EVENT_ELAPSED_TIME_V2: return s->eventElapsedTimeV2 != NULL;
	case PBC_STREAM_BEGIN_CAPTURE: return s->streamBeginCapture != NULL;
	case PBC_STREAM_END_CAPTURE: return s->streamEndCapture != NULL;
	case PBC_GRAPH_INSTANTIATE: return s->graphInstantiate != NULL;
	case PBC_GRAPH_LAUNCH: return s->graphLaunch != NULL;
	case PBC_GRAPH_EXEC_DESTROY: return s->graphExecDestroy != NULL;
	case PBC_GRAPH_DESTROY: return s->graphDestroy != NULL;
	case PBC_CTX_SET_LIMIT: return s->ctxSetLimit != NULL;
	case PBC_CTX_GET_LIMIT: return s->ctxGetLimit != NULL;
	case PBC_STREAM_SET_ATTRIBUTE: return s->streamSetAttribute != NULL;
	case PBC_CTX_RESET_PERSISTING_L2: return s->ctxResetPersistingL2 != NULL;
	}
	return 1; // mandatory slots are always filled
}

pbCUresult pbc_get_error_string(const pbCuda* s, pbCUresult r, const char** str) { return s->getErrorString(r, str); }
pbCUresult pbc_get_error_name(const pbCuda* s, pbCUresult r, const char** str) { return s->getErrorName(r, str); }
pbCUresult pbc_init(const pbCuda* s, unsigned int flags) { return s->init(flags); }
pbCUresult pbc_driver_get_version(const pbCuda* s, int* v) { return s->driverGetVersion(v); }
pbCUresult pbc_device_get(const pbCuda* s, int* dev, int ordinal) { return s->deviceGet(dev, ordinal); }
pbCUresult pbc_device_get_count(const pbCuda* s, int* n) { return s->deviceGetCount(n); }
pbCUresult pbc_device_get_name(const pbCuda* s, char* name, int len, int dev) { return s->deviceGetName(name, len, dev); }
pbCUresult pbc_device_get_attribute(const pbCuda* s, int* v, int attr, int dev) { return s->deviceGetAttribute(v, attr, dev); }
pbCUresult pbc_device_total_mem(const pbCuda* s, size_t* bytes, int dev) { return s->deviceTotalMem(bytes, dev); }

pbCUresult pbc_primary_ctx_retain(const pbCuda* s, uintptr_t* ctx, int dev) {
	pbPtr c = NULL;
	pbCUresult r = s->primaryCtxRetain(&c, dev);
	*ctx = (uintptr_t)c;
	return r;
}
pbCUresult pbc_primary_ctx_release(const pbCuda* s, int dev) { return s->primaryCtxRelease(dev); }
pbCUresult pbc_ctx_set_current(const pbCuda* s, uintptr_t ctx) { return s->ctxSetCurrent(P(ctx)); }
pbCUresult pbc_ctx_get_current(const pbCuda* s, uintptr_t* ctx) {
	pbPtr c = NULL;
	pbCUresult r = s->ctxGetCurrent(&c);
	*ctx = (uintptr_t)c;
	return r;
}
pbCUresult pbc_ctx_synchronize(const pbCuda* s) { return s->ctxSynchronize(); }

pbCUresult pbc_mem_alloc(const pbCuda* s, uint64_t* p, size_t bytes) {
	pbDevPtr d = 0;
	pbCUresult r = s->memAlloc(&d, bytes);
	*p = (uint64_t)d;
	return r;
}
pbCUresult pbc_mem_free(const pbCuda* s, uint64_t p) { return s->memFree(p); }
pbCUresult pbc_mem_host_alloc(const pbCuda* s, void** p, size_t bytes, unsigned int flags) { return s->memHostAlloc(p, bytes, flags); }
pbCUresult pbc_mem_free_host(const pbCuda* s, void* p) { return s->memFreeHost(p); }
pbCUresult pbc_ctx_set_limit(const pbCuda* s, int limit, size_t value) { return s->ctxSetLimit(limit, value); }
pbCUresult pbc_ctx_get_limit(const pbCuda* s, size_t* value, int limit) { return s->ctxGetLimit(value, limit); }
pbCUresult pbc_ctx_reset_persisting_l2(const pbCuda* s) { return s->ctxResetPersistingL2(); }

// CUstreamAttrValue is CUlaunchAttributeValue since CUDA 12: a union padded to
// 64 bytes (char pad[64]) whose accessPolicyWindow member is at offset 0; CUDA
// 11's union was smaller and read the same member. The driver reads the member
// CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW (1) names.
typedef union { char pad[64]; pbAccessPolicyWindow accessPolicyWindow; } pbStreamAttrValue;
_Static_assert(sizeof(pbStreamAttrValue) == 64, "CUstreamAttrValue is 64 bytes");
pbCUresult pbc_stream_set_access_policy(const pbCuda* s, uintptr_t st, const pbAccessPolicyWindow* w) {
	pbStreamAttrValue v;
	memset(&v, 0, sizeof v);
	v.accessPolicyWindow = *w;
	return s->streamSetAttribute(P(st), 1, &v);
}
pbCUresult pbc_mem_get_info(const pbCuda* s, size_t* free, size_t* total) { return s->memGetInfo(free, total); }
pbCUresult pbc_memcpy_htod(const pbCuda* s, uint64_t dst, const void* src, size_t n) { return s->memcpyHtoD(dst, src, n); }
pbCUresult pbc_memcpy_dtoh(const pbCuda* s, void* dst, uint64_t src, size_t n) { return s->memcpyDtoH(dst, src, n); }
pbCUresult pbc_memcpy_htod_async(const pbCuda* s, uint64_t dst, const void* src, size_t n, uintptr_t st) {
	return s->memcpyHtoDAsync(dst, src, n, P(st));
}
pbCUresult pbc_memcpy_dtoh_async(const pbCuda* s, void* dst, uint64_t src, size_t n, uintptr_t st) {
	return s->memcpyDtoHAsync(dst, src, n, P(st));
}
pbCUresult pbc_memcpy_dtod_async(const pbCuda* s, uint64_t dst, uint64_t src, size_t n, uintptr_t st) {
	return s->memcpyDtoDAsync(dst, src, n, P(st));
}
pbCUresult pbc_memset_d8(const pbCuda* s, uint64_t dst, unsigned char v, size_t n) { return s->memsetD8(dst, v, n); }
pbCUresult pbc_memset_d8_async(const pbCuda* s, uint64_t dst, unsigned char v, size_t n, uintptr_t st) {
	return s->memsetD8Async(dst, v, n, P(st));
}
pbCUresult pbc_memset_d32_async(const pbCuda* s, uint64_t dst, unsigned int v, size_t n, uintptr_t st) {
	return s->memsetD32Async(dst, v, n, P(st));
}

pbCUresult pbc_stream_create(const pbCuda* s, uintptr_t* st, unsigned int flags) {
	pbPtr h = NULL;
	pbCUresult r = s->streamCreate(&h, flags);
	*st = (uintptr_t)h;
	return r;
}
pbCUresult pbc_stream_destroy(const pbCuda* s, uintptr_t st) { return s->streamDestroy(P(st)); }
pbCUresult pbc_stream_synchronize(const pbCuda* s, uintptr_t st) { return s->streamSynchronize(P(st)); }

pbCUresult pbc_event_create(const pbCuda* s, uintptr_t* ev, unsigned int flags) {
	pbPtr h = NULL;
	pbCUresult r = s->eventCreate(&h, flags);
	*ev = (uintptr_t)h;
	return r;
}
pbCUresult pbc_event_destroy(const pbCuda* s, uintptr_t ev) { return s->eventDestroy(P(ev)); }
pbCUresult pbc_event_record(const pbCuda* s, uintptr_t ev, uintptr_t st) { return s->eventRecord(P(ev), P(st)); }
pbCUresult pbc_event_synchronize(const pbCuda* s, uintptr_t ev) { return s->eventSynchronize(P(ev)); }
pbCUresult pbc_event_query(const pbCuda* s, uintptr_t ev) { return s->eventQuery(P(ev)); }
pbCUresult pbc_event_elapsed_time(const pbCuda* s, float* ms, uintptr_t start, uintptr_t end) {
	if (s->eventElapsedTimeV2 != NULL) {
		return s->eventElapsedTimeV2(ms, P(start), P(end));
	}
	return s->eventElapsedTime(ms, P(start), P(end));
}

pbCUresult pbc_module_load_data(const pbCuda* s, uintptr_t* mod, const void* image) {
	pbPtr h = NULL;
	pbCUresult r = s->moduleLoadData(&h, image);
	*mod = (uintptr_t)h;
	return r;
}
pbCUresult pbc_module_unload(const pbCuda* s, uintptr_t mod) { return s->moduleUnload(P(mod)); }
pbCUresult pbc_module_get_function(const pbCuda* s, uintptr_t* fn, uintptr_t mod, const char* name) {
	pbPtr h = NULL;
	pbCUresult r = s->moduleGetFunction(&h, P(mod), name);
	*fn = (uintptr_t)h;
	return r;
}

pbCUresult pbc_func_set_attribute(const pbCuda* s, uintptr_t fn, int attr, int v) { return s->funcSetAttribute(P(fn), attr, v); }
pbCUresult pbc_func_get_attribute(const pbCuda* s, int* v, int attr, uintptr_t fn) { return s->funcGetAttribute(v, attr, P(fn)); }

// pbc_launch packs kernelParams: cuLaunchKernel takes an array of pointers,
// one per kernel parameter, each pointing at the parameter's value; the
// driver reads each parameter's size from the kernel image and copies the
// values during the call. Every value travels in an 8-byte little-endian
// slot, so a 4-byte parameter reads the slot's low half.
pbCUresult pbc_launch(const pbCuda* s, uintptr_t fn, unsigned int gx, unsigned int gy, unsigned int gz,
	unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, uintptr_t st,
	const uint64_t* args, int nargs) {
	uint64_t vals[PBC_MAX_ARGS];
	void* params[PBC_MAX_ARGS];
	if (nargs < 0 || nargs > PBC_MAX_ARGS) {
		return 1; // CUDA_ERROR_INVALID_VALUE
	}
	for (int i = 0; i < nargs; i++) {
		vals[i] = args[i];
		params[i] = &vals[i];
	}
	return s->launchKernel(P(fn), gx, gy, gz, bx, by, bz, shared, P(st), nargs > 0 ? params : NULL, NULL);
}

pbCUresult pbc_stream_begin_capture(const pbCuda* s, uintptr_t st, int mode) { return s->streamBeginCapture(P(st), mode); }
pbCUresult pbc_stream_end_capture(const pbCuda* s, uintptr_t st, uintptr_t* graph) {
	pbPtr g = NULL;
	pbCUresult r = s->streamEndCapture(P(st), &g);
	*graph = (uintptr_t)g;
	return r;
}
pbCUresult pbc_graph_instantiate(const pbCuda* s, uintptr_t* exec, uintptr_t graph, unsigned long long flags) {
	pbPtr e = NULL;
	pbCUresult r = s->graphInstantiate(&e, P(graph), flags);
	*exec = (uintptr_t)e;
	return r;
}
pbCUresult pbc_graph_launch(const pbCuda* s, uintptr_t exec, uintptr_t st) { return s->graphLaunch(P(exec), P(st)); }
pbCUresult pbc_graph_exec_destroy(const pbCuda* s, uintptr_t exec) { return s->graphExecDestroy(P(exec)); }
pbCUresult pbc_graph_destroy(const pbCuda* s, uintptr_t graph) { return s->graphDestroy(P(graph)); }

// ---- cuBLAS: cublas_api.h (cuBLAS 11+, the _v2 symbols cublas_v2.h selects) ----

struct pbBlas {
	pbBlasStatus (*create)(pbPtr*);               // cublasCreate_v2(cublasHandle_t*)
	pbBlasStatus (*destroy)(pbPtr);               // cublasDestroy_v2(cublasHandle_t)
	pbBlasStatus (*getVersion)(pbPtr, int*);      // cublasGetVersion_v2(cublasHandle_t, int*)
	pbBlasStatus (*setStream)(pbPtr, pbPtr);      // cublasSetStream_v2(cublasHandle_t, cudaStream_t)
	pbBlasStatus (*setWorkspace)(pbPtr, void*, size_t); // cublasSetWorkspace_v2(cublasHandle_t, void*, size_t)
	pbBlasStatus (*setMathMode)(pbPtr, int);      // cublasSetMathMode(cublasHandle_t, cublasMath_t)
	// cublasGemmEx(handle, cublasOperation_t transa, transb, int m, n, k, const void* alpha,
	//   const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype, int ldb,
	//   const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t, cublasGemmAlgo_t)
	pbBlasStatus (*gemmEx)(pbPtr, int, int, int, int, int, const void*, const void*, int, int,
		const void*, int, int, const void*, void*, int, int, int, int);
	const char* (*getStatusString)(pbBlasStatus); // cublasGetStatusString(cublasStatus_t)
	const char* (*getStatusName)(pbBlasStatus);   // cublasGetStatusName(cublasStatus_t)
	// cublasGemmStridedBatchedEx(handle, transa, transb, int m, n, k, const void* alpha,
	//   const void* A, cudaDataType Atype, int lda, long long strideA, const void* B, Btype, int ldb,
	//   long long strideB, const void* beta, void* C, Ctype, int ldc, long long strideC,
	//   int batchCount, cublasComputeType_t, cublasGemmAlgo_t)
	pbBlasStatus (*gemmStridedBatchedEx)(pbPtr, int, int, int, int, int, const void*, const void*, int, int, long long,
		const void*, int, int, long long, const void*, void*, int, int, long long, int, int, int);
};

pbBlas* pbb_new(void) { return calloc(1, sizeof(pbBlas)); }
void pbb_free(pbBlas* s) { free(s); }

void pbb_set(pbBlas* s, int slot, void* fn) {
	switch (slot) {
	SLOT(PBB_CREATE, create);
	SLOT(PBB_DESTROY, destroy);
	SLOT(PBB_GET_VERSION, getVersion);
	SLOT(PBB_SET_STREAM, setStream);
	SLOT(PBB_SET_WORKSPACE, setWorkspace);
	SLOT(PBB_SET_MATH_MODE, setMathMode);
	SLOT(PBB_GEMM_EX, gemmEx);
	SLOT(PBB_GET_STATUS_STRING, getStatusString);
	SLOT(PBB_GET_STATUS_NAME, getStatusName);
	SLOT(PBB_GEMM_STRIDED_BATCHED_EX, gemmStridedBatchedEx);
	}
}

int pbb_has(const pbBlas* s, int slot) {
	switch (slot) {
	case PBB_SET_WORKSPACE: return s->setWorkspace != NULL;
	case PBB_GET_STATUS_STRING: return s->getStatusString != NULL;
	case PBB_GET_STATUS_NAME: return s->getStatusName != NULL;
	case PBB_GEMM_STRIDED_BATCHED_EX: return s->gemmStridedBatchedEx != NULL;
	}
	return 1;
}

pbBlasStatus pbb_create(const pbBlas* s, uintptr_t* h) {
	pbPtr p = NULL;
	pbBlasStatus r = s->create(&p);
	*h = (uintptr_t)p;
	return r;
}
pbBlasStatus pbb_destroy(const pbBlas* s, uintptr_t h) { return s->destroy(P(h)); }
pbBlasStatus pbb_get_version(const pbBlas* s, uintptr_t h, int* v) { return s->getVersion(P(h), v); }
pbBlasStatus pbb_set_stream(const pbBlas* s, uintptr_t h, uintptr_t st) { return s->setStream(P(h), P(st)); }
pbBlasStatus pbb_set_workspace(const pbBlas* s, uintptr_t h, uint64_t ws, size_t bytes) {
	return s->setWorkspace(P(h), (void*)(uintptr_t)ws, bytes);
}
pbBlasStatus pbb_set_math_mode(const pbBlas* s, uintptr_t h, int mode) { return s->setMathMode(P(h), mode); }
pbBlasStatus pbb_gemm_ex(const pbBlas* s, uintptr_t h, int transa, int transb, int m, int n, int k,
	float alpha, uint64_t a, int atype, int lda, uint64_t b, int btype, int ldb,
	float beta, uint64_t c, int ctype, int ldc, int compute, int algo) {
	return s->gemmEx(P(h), transa, transb, m, n, k, &alpha,
		(const void*)(uintptr_t)a, atype, lda, (const void*)(uintptr_t)b, btype, ldb,
		&beta, (void*)(uintptr_t)c, ctype, ldc, compute, algo);
}
pbBlasStatus pbb_gemm_strided_batched_ex(const pbBlas* s, uintptr_t h, int transa, int transb, int m, int n, int k,
	float alpha, uint64_t a, int atype, int lda, long long stride_a, uint64_t b, int btype, int ldb, long long stride_b,
	float beta, uint64_t c, int ctype, int ldc, long long stride_c, int batch, int compute, int algo) {
	return s->gemmStridedBatchedEx(P(h), transa, transb, m, n, k, &alpha,
		(const void*)(uintptr_t)a, atype, lda, stride_a, (const void*)(uintptr_t)b, btype, ldb, stride_b,
		&beta, (void*)(uintptr_t)c, ctype, ldc, stride_c, batch, compute, algo);
}
const char* pbb_get_status_string(const pbBlas* s, pbBlasStatus st) { return s->getStatusString ? s->getStatusString(st) : NULL; }
const char* pbb_get_status_name(const pbBlas* s, pbBlasStatus st) { return s->getStatusName ? s->getStatusName(st) : NULL; }

// ---- NVRTC: nvrtc.h (NVRTC 11.1+ for the CUBIN calls) ----

struct pbRtc {
	const char* (*getErrorString)(pbRtcResult);   // nvrtcGetErrorString(nvrtcResult)
	pbRtcResult (*version)(int*, int*);           // nvrtcVersion(int* major, int* minor)
	// nvrtcCreateProgram(nvrtcProgram*, const char* src, const char* name, int numHeaders,
	//   const char* const* headers, const char* const* includeNames)
	pbRtcResult (*createProgram)(pbPtr*, const char*, const char*, int, const char* const*, const char* const*);
	pbRtcResult (*destroyProgram)(pbPtr*);        // nvrtcDestroyProgram(nvrtcProgram*)
	pbRtcResult (*compileProgram)(pbPtr, int, const char* const*); // nvrtcCompileProgram(nvrtcProgram, int, const char* const*)
	pbRtcResult (*getPTXSize)(pbPtr, size_t*);    // nvrtcGetPTXSize(nvrtcProgram, size_t*)
	pbRtcResult (*getPTX)(pbPtr, char*);          // nvrtcGetPTX(nvrtcProgram, char*)
	pbRtcResult (*getCUBINSize)(pbPtr, size_t*);  // nvrtcGetCUBINSize(nvrtcProgram, size_t*)
	pbRtcResult (*getCUBIN)(pbPtr, char*);        // nvrtcGetCUBIN(nvrtcProgram, char*)
	pbRtcResult (*getProgramLogSize)(pbPtr, size_t*); // nvrtcGetProgramLogSize(nvrtcProgram, size_t*)
	pbRtcResult (*getProgramLog)(pbPtr, char*);   // nvrtcGetProgramLog(nvrtcProgram, char*)
};

pbRtc* pbr_new(void) { return calloc(1, sizeof(pbRtc)); }
void pbr_free(pbRtc* s) { free(s); }

void pbr_set(pbRtc* s, int slot, void* fn) {
	switch (slot) {
	SLOT(PBR_GET_ERROR_STRING, getErrorString);
	SLOT(PBR_VERSION, version);
	SLOT(PBR_CREATE_PROGRAM, createProgram);
	SLOT(PBR_DESTROY_PROGRAM, destroyProgram);
	SLOT(PBR_COMPILE_PROGRAM, compileProgram);
	SLOT(PBR_GET_PTX_SIZE, getPTXSize);
	SLOT(PBR_GET_PTX, getPTX);
	SLOT(PBR_GET_CUBIN_SIZE, getCUBINSize);
	SLOT(PBR_GET_CUBIN, getCUBIN);
	SLOT(PBR_GET_PROGRAM_LOG_SIZE, getProgramLogSize);
	SLOT(PBR_GET_PROGRAM_LOG, getProgramLog);
	}
}

int pbr_has(const pbRtc* s, int slot) {
	switch (slot) {
	case PBR_GET_CUBIN_SIZE: return s->getCUBINSize != NULL;
	case PBR_GET_CUBIN: return s->getCUBIN != NULL;
	}
	return 1;
}

const char* pbr_get_error_string(const pbRtc* s, pbRtcResult r) { return s->getErrorString(r); }
pbRtcResult pbr_version(const pbRtc* s, int* major, int* minor) { return s->version(major, minor); }
pbRtcResult pbr_create_program(const pbRtc* s, uintptr_t* prog, const char* src, const char* name) {
	pbPtr p = NULL;
	pbRtcResult r = s->createProgram(&p, src, name, 0, NULL, NULL);
	*prog = (uintptr_t)p;
	return r;
}
pbRtcResult pbr_destroy_program(const pbRtc* s, uintptr_t prog) {
	pbPtr p = P(prog);
	return s->destroyProgram(&p);
}
pbRtcResult pbr_compile_program(const pbRtc* s, uintptr_t prog, int nopts, const char* const* opts) {
	return s->compileProgram(P(prog), nopts, opts);
}
pbRtcResult pbr_get_ptx_size(const pbRtc* s, uintptr_t prog, size_t* n) { return s->getPTXSize(P(prog), n); }
pbRtcResult pbr_get_ptx(const pbRtc* s, uintptr_t prog, char* out) { return s->getPTX(P(prog), out); }
pbRtcResult pbr_get_cubin_size(const pbRtc* s, uintptr_t prog, size_t* n) { return s->getCUBINSize(P(prog), n); }
pbRtcResult pbr_get_cubin(const pbRtc* s, uintptr_t prog, char* out) { return s->getCUBIN(P(prog), out); }
pbRtcResult pbr_get_program_log_size(const pbRtc* s, uintptr_t prog, size_t* n) { return s->getProgramLogSize(P(prog), n); }
pbRtcResult pbr_get_program_log(const pbRtc* s, uintptr_t prog, char* out) { return s->getProgramLog(P(prog), out); }

size_t pb_layout(int what) {
	switch (what) {
	case PBL_DEVPTR: return sizeof(pbDevPtr);
	case PBL_SIZE_T: return sizeof(size_t);
	case PBL_HANDLE: return sizeof(pbPtr);
	case PBL_ARG_SLOT: return sizeof(uint64_t);
	case PBL_ENUM: return sizeof(pbCUresult);
	case PBL_MAX_ARGS: return PBC_MAX_ARGS;
	case PBL_APW_SIZE: return sizeof(pbAccessPolicyWindow);
	case PBL_APW_BASE: return offsetof(pbAccessPolicyWindow, base_ptr);
	case PBL_APW_BYTES: return offsetof(pbAccessPolicyWindow, num_bytes);
	case PBL_APW_HIT_RATIO: return offsetof(pbAccessPolicyWindow, hitRatio);
	case PBL_APW_HIT_PROP: return offsetof(pbAccessPolicyWindow, hitProp);
	case PBL_APW_MISS_PROP: return offsetof(pbAccessPolicyWindow, missProp);
	case PBL_STREAM_ATTR_VALUE: return sizeof(pbStreamAttrValue);
	}
	return (size_t)-1;
}

// ---- cuBLASLt: cublasLt.h (cuBLAS 11.3+; values checked against the
// CUDA 11.x header and the cuBLAS 12/13 documentation) ----

_Static_assert(sizeof(pbLtHeuristic) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes");

struct pbLt {
	pbBlasStatus (*create)(pbPtr*);                          // cublasLtCreate(cublasLtHandle_t*)
	pbBlasStatus (*destroy)(pbPtr);                          // cublasLtDestroy(cublasLtHandle_t)
	pbBlasStatus (*descCreate)(pbPtr*, int, int);            // cublasLtMatmulDescCreate(cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t scaleType)
	pbBlasStatus (*descDestroy)(pbPtr);                      // cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t)
	pbBlasStatus (*descSet)(pbPtr, int, const void*, size_t); // cublasLtMatmulDescSetAttribute(desc, cublasLtMatmulDescAttributes_t, const void* buf, size_t)
	// cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t*, cudaDataType, uint64_t rows, uint64_t cols, int64_t ld)
	pbBlasStatus (*layoutCreate)(pbPtr*, int, uint64_t, uint64_t, int64_t);
	pbBlasStatus (*layoutDestroy)(pbPtr);                      // cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t)
	pbBlasStatus (*layoutSet)(pbPtr, int, const void*, size_t); // cublasLtMatrixLayoutSetAttribute(layout, attr, const void*, size_t)
	pbBlasStatus (*prefCreate)(pbPtr*);                         // cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t*)
	pbBlasStatus (*prefDestroy)(pbPtr);                         // cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t)
	pbBlasStatus (*prefSet)(pbPtr, int, const void*, size_t);   // cublasLtMatmulPreferenceSetAttribute(pref, attr, const void*, size_t)
	// cublasLtMatmulAlgoGetHeuristic(handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference,
	//   int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount)
	pbBlasStatus (*heuristic)(pbPtr, pbPtr, pbPtr, pbPtr, pbPtr, pbPtr, pbPtr, int, pbLtHeuristic*, int*);
	// cublasLtMatmul(handle, desc, const void* alpha, const void* A, Adesc, const void* B, Bdesc,
	//   const void* beta, const void* C, Cdesc, void* D, Ddesc, const cublasLtMatmulAlgo_t* algo,
	//   void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream)
	pbBlasStatus (*matmul)(pbPtr, pbPtr, const void*, const void*, pbPtr, const void*, pbPtr, const void*,
		const void*, pbPtr, void*, pbPtr, const void*, void*, size_t, pbPtr);
	size_t (*getVersion)(void);                   // size_t cublasLtGetVersion(void)
	const char* (*getStatusString)(pbBlasStatus); // cublasLtGetStatusString(cublasStatus_t)
};

pbLt* pblt_new(void) { return calloc(1, sizeof(pbLt)); }
void pblt_free(pbLt* s) { free(s); }

void pblt_set(pbLt* s, int slot, void* fn) {
	switch (slot) {
	SLOT(PBLT_CREATE, create);
	SLOT(PBLT_DESTROY, destroy);
	SLOT(PBLT_DESC_CREATE, descCreate);
	SLOT(PBLT_DESC_DESTROY, descDestroy);
	SLOT(PBLT_DESC_SET, descSet);
	SLOT(PBLT_LAYOUT_CREATE, layoutCreate);
	SLOT(PBLT_LAYOUT_DESTROY, layoutDestroy);
	SLOT(PBLT_LAYOUT_SET, layoutSet);
	SLOT(PBLT_PREF_CREATE, prefCreate);
	SLOT(PBLT_PREF_DESTROY, prefDestroy);
	SLOT(PBLT_PREF_SET, prefSet);
	SLOT(PBLT_HEURISTIC, heuristic);
	SLOT(PBLT_MATMUL, matmul);
	SLOT(PBLT_GET_VERSION, getVersion);
	SLOT(PBLT_GET_STATUS_STRING, getStatusString);
	}
}

int pblt_has(const pbLt* s, int slot) {
	switch (slot) {
	case PBLT_GET_VERSION: return s->getVersion != NULL;
	case PBLT_GET_STATUS_STRING: return s->getStatusString != NULL;
	}
	return 1;
}

// ltSet calls an attribute setter with v as size bytes (4 or 8).
static pbBlasStatus ltSet(pbBlasStatus (*f)(pbPtr, int, const void*, size_t), uintptr_t o, int attr, uint64_t v, size_t size) {
	if (size == 4) {
		uint32_t x = (uint32_t)v;
		return f(P(o), attr, &x, 4);
	}
	return f(P(o), attr, &v, size);
}

pbBlasStatus pblt_create(const pbLt* s, uintptr_t* h) {
	pbPtr p = NULL;
	pbBlasStatus r = s->create(&p);
	*h = (uintptr_t)p;
	return r;
}
pbBlasStatus pblt_destroy(const pbLt* s, uintptr_t h) { return s->destroy(P(h)); }
pbBlasStatus pblt_desc_create(const pbLt* s, uintptr_t* d, int compute, int scale) {
	pbPtr p = NULL;
	pbBlasStatus r = s->descCreate(&p, compute, scale);
	*d = (uintptr_t)p;
	return r;
}
pbBlasStatus pblt_desc_destroy(const pbLt* s, uintptr_t d) { return s->descDestroy(P(d)); }
pbBlasStatus pblt_desc_set(const pbLt* s, uintptr_t d, int attr, uint64_t v, size_t size) { return ltSet(s->descSet, d, attr, v, size); }
pbBlasStatus pblt_layout_create(const pbLt* s, uintptr_t* l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	pbPtr p = NULL;
	pbBlasStatus r = s->layoutCreate(&p, type, rows, cols, ld);
	*l = (uintptr_t)p;
	return r;
}
pbBlasStatus pblt_layout_destroy(const pbLt* s, uintptr_t l) { return s->layoutDestroy(P(l)); }
pbBlasStatus pblt_layout_set(const pbLt* s, uintptr_t l, int attr, uint64_t v, size_t size) { return ltSet(s->layoutSet, l, attr, v, size); }
pbBlasStatus pblt_pref_create(const pbLt* s, uintptr_t* p) {
	pbPtr q = NULL;
	pbBlasStatus r = s->prefCreate(&q);
	*p = (uintptr_t)q;
	return r;
}
pbBlasStatus pblt_pref_destroy(const pbLt* s, uintptr_t p) { return s->prefDestroy(P(p)); }
pbBlasStatus pblt_pref_set(const pbLt* s, uintptr_t p, int attr, uint64_t v, size_t size) { return ltSet(s->prefSet, p, attr, v, size); }
pbBlasStatus pblt_heuristic(const pbLt* s, uintptr_t h, uintptr_t desc, uintptr_t a, uintptr_t b, uintptr_t c,
	uintptr_t d, uintptr_t pref, int requested, pbLtHeuristic* results, int* returned) {
	return s->heuristic(P(h), P(desc), P(a), P(b), P(c), P(d), P(pref), requested, results, returned);
}
pbBlasStatus pblt_matmul(const pbLt* s, uintptr_t h, uintptr_t desc, float alpha, uint64_t a, uintptr_t adesc,
	uint64_t b, uintptr_t bdesc, float beta, uint64_t c, uintptr_t cdesc, uint64_t d, uintptr_t ddesc,
	const uint64_t* algo, uint64_t ws, size_t wsBytes, uintptr_t st) {
	return s->matmul(P(h), P(desc), &alpha, (const void*)(uintptr_t)a, P(adesc), (const void*)(uintptr_t)b, P(bdesc),
		&beta, (const void*)(uintptr_t)c, P(cdesc), (void*)(uintptr_t)d, P(ddesc), algo, (void*)(uintptr_t)ws, wsBytes, P(st));
}
size_t pblt_get_version(const pbLt* s) { return s->getVersion ? s->getVersion() : 0; }
const char* pblt_get_status_string(const pbLt* s, pbBlasStatus st) { return s->getStatusString ? s->getStatusString(st) : NULL; }

size_t pblt_layout(int what) {
	switch (what) {
	case 0: return sizeof(pbLtHeuristic);
	case 1: return offsetof(pbLtHeuristic, workspaceSize);
	case 2: return offsetof(pbLtHeuristic, state);
	case 3: return offsetof(pbLtHeuristic, wavesCount);
	}
	return (size_t)-1;
}
