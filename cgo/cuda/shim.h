//go:build cgo

// partbench's own declarations of the CUDA driver, cuBLAS and NVRTC entry
// points it calls, written from ABI facts of the public headers (cuda.h,
// cublas_api.h, library_types.h, nvrtc.h; checked against CUDA 12.6 and the
// CUDA 13 driver API change list). No CUDA header is included:
//   - CUresult, cublasStatus_t, nvrtcResult and every enum passed here
//     (CUdevice_attribute, CUstreamCaptureMode, cublasOperation_t,
//     cudaDataType, cublasComputeType_t, cublasGemmAlgo_t) are int-sized;
//   - CUdevice is an int; CUdeviceptr is `unsigned long long` on LP64
//     (cuda.h: "an unsigned integer type whose size matches the size of a
//     pointer"), carried here as uint64_t;
//   - CUcontext, CUmodule, CUfunction, CUstream, CUevent, CUgraph,
//     CUgraphExec, cublasHandle_t, nvrtcProgram are opaque pointers, carried
//     as uintptr_t.
// The libraries' functions are reached through tables of pointers filled
// from dlsym (capi_*.go); the wrappers below are the only code that calls
// through them.
#ifndef PARTBENCH_CUDA_SHIM_H
#define PARTBENCH_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef int pbCUresult;
typedef int pbBlasStatus;
typedef int pbRtcResult;

// The most kernel parameters pbc_launch packs (partbench's kernels take < 20).
#define PBC_MAX_ARGS 32

// ---- CUDA driver (libcuda.so.1) ----

// Driver symbol slots; capi_driver.go lists their names in this order.
enum {
	PBC_GET_ERROR_STRING, PBC_GET_ERROR_NAME, PBC_INIT, PBC_DRIVER_GET_VERSION,
	PBC_DEVICE_GET, PBC_DEVICE_GET_COUNT, PBC_DEVICE_GET_NAME, PBC_DEVICE_GET_ATTRIBUTE,
	PBC_DEVICE_TOTAL_MEM, PBC_PRIMARY_CTX_RETAIN, PBC_PRIMARY_CTX_RELEASE,
	PBC_CTX_SET_CURRENT, PBC_CTX_GET_CURRENT, PBC_CTX_SYNCHRONIZE,
	PBC_MEM_ALLOC, PBC_MEM_FREE, PBC_MEM_GET_INFO,
	PBC_MEMCPY_HTOD, PBC_MEMCPY_DTOH, PBC_MEMCPY_HTOD_ASYNC, PBC_MEMCPY_DTOH_ASYNC,
	PBC_MEMCPY_DTOD_ASYNC, PBC_MEMSET_D8, PBC_MEMSET_D8_ASYNC, PBC_MEMSET_D32_ASYNC,
	PBC_STREAM_CREATE, PBC_STREAM_DESTROY, PBC_STREAM_SYNCHRONIZE,
	PBC_EVENT_CREATE, PBC_EVENT_DESTROY, PBC_EVENT_RECORD, PBC_EVENT_SYNCHRONIZE, PBC_EVENT_QUERY,
	PBC_EVENT_ELAPSED_TIME, PBC_EVENT_ELAPSED_TIME_V2,
	PBC_MODULE_LOAD_DATA, PBC_MODULE_UNLOAD, PBC_MODULE_GET_FUNCTION, PBC_LAUNCH_KERNEL,
	PBC_STREAM_BEGIN_CAPTURE, PBC_STREAM_END_CAPTURE, PBC_GRAPH_INSTANTIATE,
	PBC_GRAPH_LAUNCH, PBC_GRAPH_EXEC_DESTROY, PBC_GRAPH_DESTROY,
	PBC_FUNC_SET_ATTRIBUTE, PBC_FUNC_GET_ATTRIBUTE,
	PBC_MEM_HOST_ALLOC, PBC_MEM_FREE_HOST,
	PBC_CTX_SET_LIMIT, PBC_CTX_GET_LIMIT, PBC_STREAM_SET_ATTRIBUTE, PBC_CTX_RESET_PERSISTING_L2,
	PBC_NUM_SYMS
};
// CUaccessPolicyWindow (cuda.h, CUDA 11.0+): { void* base_ptr; size_t num_bytes;
// float hitRatio; CUaccessProperty hitProp; CUaccessProperty missProp; }.
typedef struct {
	uint64_t base_ptr; // void* in cuda.h: a device address, 8 bytes on LP64 like every pointer
	size_t num_bytes;
	float hitRatio;
	int hitProp;
	int missProp;
} pbAccessPolicyWindow;

typedef struct pbCuda pbCuda;

pbCuda* pbc_new(void);
void pbc_free(pbCuda* s);
void pbc_set(pbCuda* s, int slot, void* fn);
int pbc_has(const pbCuda* s, int slot);

pbCUresult pbc_get_error_string(const pbCuda* s, pbCUresult r, const char** str);
pbCUresult pbc_get_error_name(const pbCuda* s, pbCUresult r, const char** str);
pbCUresult pbc_init(const pbCuda* s, unsigned int flags);
pbCUresult pbc_driver_get_version(const pbCuda* s, int* v);
pbCUresult pbc_device_get(const pbCuda* s, int* dev, int ordinal);
pbCUresult pbc_device_get_count(const pbCuda* s, int* n);
pbCUresult pbc_device_get_name(const pbCuda* s, char* name, int len, int dev);
pbCUresult pbc_device_get_attribute(const pbCuda* s, int* v, int attr, int dev);
pbCUresult pbc_device_total_mem(const pbCuda* s, size_t* bytes, int dev);
pbCUresult pbc_primary_ctx_retain(const pbCuda* s, uintptr_t* ctx, int dev);
pbCUresult pbc_primary_ctx_release(const pbCuda* s, int dev);
pbCUresult pbc_ctx_set_current(const pbCuda* s, uintptr_t ctx);
pbCUresult pbc_ctx_get_current(const pbCuda* s, uintptr_t* ctx);
pbCUresult pbc_ctx_synchronize(const pbCuda* s);
pbCUresult pbc_mem_alloc(const pbCuda* s, uint64_t* p, size_t bytes);
pbCUresult pbc_mem_free(const pbCuda* s, uint64_t p);
pbCUresult pbc_mem_host_alloc(const pbCuda* s, void** p, size_t bytes, unsigned int flags);
pbCUresult pbc_mem_free_host(const pbCuda* s, void* p);
pbCUresult pbc_ctx_set_limit(const pbCuda* s, int limit, size_t value);
pbCUresult pbc_ctx_get_limit(const pbCuda* s, size_t* value, int limit);
pbCUresult pbc_stream_set_access_policy(const pbCuda* s, uintptr_t st, const pbAccessPolicyWindow* w);
pbCUresult pbc_ctx_reset_persisting_l2(const pbCuda* s);
pbCUresult pbc_mem_get_info(const pbCuda* s, size_t* free, size_t* total);
pbCUresult pbc_memcpy_htod(const pbCuda* s, uint64_t dst, const void* src, size_t n);
pbCUresult pbc_memcpy_dtoh(const pbCuda* s, void* dst, uint64_t src, size_t n);
pbCUresult pbc_memcpy_htod_async(const pbCuda* s, uint64_t dst, const void* src, size_t n, uintptr_t st);
pbCUresult pbc_memcpy_dtoh_async(const pbCuda* s, void* dst, uint64_t src, size_t n, uintptr_t st);
pbCUresult pbc_memcpy_dtod_async(const pbCuda* s, uint64_t dst, uint64_t src, size_t n, uintptr_t st);
pbCUresult pbc_memset_d8(const pbCuda* s, uint64_t dst, unsigned char v, size_t n);
pbCUresult pbc_memset_d8_async(const pbCuda* s, uint64_t dst, unsigned char v, size_t n, uintptr_t st);
pbCUresult pbc_memset_d32_async(const pbCuda* s, uint64_t dst, unsigned int v, size_t n, uintptr_t st);
pbCUresult pbc_stream_create(const pbCuda* s, uintptr_t* st, unsigned int flags);
pbCUresult pbc_stream_destroy(const pbCuda* s, uintptr_t st);
pbCUresult pbc_stream_synchronize(const pbCuda* s, uintptr_t st);
pbCUresult pbc_event_create(const pbCuda* s, uintptr_t* ev, unsigned int flags);
pbCUresult pbc_event_destroy(const pbCuda* s, uintptr_t ev);
pbCUresult pbc_event_record(const pbCuda* s, uintptr_t ev, uintptr_t st);
pbCUresult pbc_event_synchronize(const pbCuda* s, uintptr_t ev);
pbCUresult pbc_event_query(const pbCuda* s, uintptr_t ev);
pbCUresult pbc_event_elapsed_time(const pbCuda* s, float* ms, uintptr_t start, uintptr_t end);
pbCUresult pbc_module_load_data(const pbCuda* s, uintptr_t* mod, const void* image);
pbCUresult pbc_module_unload(const pbCuda* s, uintptr_t mod);
pbCUresult pbc_module_get_function(const pbCuda* s, uintptr_t* fn, uintptr_t mod, const char* name);
// cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) and
// cuFuncGetAttribute(int*, CUfunction_attribute, CUfunction).
pbCUresult pbc_func_set_attribute(const pbCuda* s, uintptr_t fn, int attr, int v);
pbCUresult pbc_func_get_attribute(const pbCuda* s, int* v, int attr, uintptr_t fn);
pbCUresult pbc_launch(const pbCuda* s, uintptr_t fn, unsigned int gx, unsigned int gy, unsigned int gz,
	unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, uintptr_t st,
	const uint64_t* args, int nargs);
pbCUresult pbc_stream_begin_capture(const pbCuda* s, uintptr_t st, int mode);
pbCUresult pbc_stream_end_capture(const pbCuda* s, uintptr_t st, uintptr_t* graph);
pbCUresult pbc_graph_instantiate(const pbCuda* s, uintptr_t* exec, uintptr_t graph, unsigned long long flags);
pbCUresult pbc_graph_launch(const pbCuda* s, uintptr_t exec, uintptr_t st);
pbCUresult pbc_graph_exec_destroy(const pbCuda* s, uintptr_t exec);
pbCUresult pbc_graph_destroy(const pbCuda* s, uintptr_t graph);

// ---- cuBLAS (libcublas.so.N) ----

enum {
	PBB_CREATE, PBB_DESTROY, PBB_GET_VERSION, PBB_SET_STREAM, PBB_SET_WORKSPACE,
	PBB_SET_MATH_MODE, PBB_GEMM_EX, PBB_GET_STATUS_STRING, PBB_GET_STATUS_NAME,
	PBB_GEMM_STRIDED_BATCHED_EX,
	PBB_NUM_SYMS
};

typedef struct pbBlas pbBlas;

pbBlas* pbb_new(void);
void pbb_free(pbBlas* s);
void pbb_set(pbBlas* s, int slot, void* fn);
int pbb_has(const pbBlas* s, int slot);

pbBlasStatus pbb_create(const pbBlas* s, uintptr_t* h);
pbBlasStatus pbb_destroy(const pbBlas* s, uintptr_t h);
pbBlasStatus pbb_get_version(const pbBlas* s, uintptr_t h, int* v);
pbBlasStatus pbb_set_stream(const pbBlas* s, uintptr_t h, uintptr_t st);
pbBlasStatus pbb_set_workspace(const pbBlas* s, uintptr_t h, uint64_t ws, size_t bytes);
pbBlasStatus pbb_set_math_mode(const pbBlas* s, uintptr_t h, int mode);
// alpha and beta are float scalars in host memory (CUBLAS_COMPUTE_32F with
// the default host pointer mode); the wrapper passes pointers to its copies.
pbBlasStatus pbb_gemm_ex(const pbBlas* s, uintptr_t h, int transa, int transb, int m, int n, int k,
	float alpha, uint64_t a, int atype, int lda, uint64_t b, int btype, int ldb,
	float beta, uint64_t c, int ctype, int ldc, int compute, int algo);
// cublasGemmStridedBatchedEx: batch GEMMs, operand i at A + i·strideA
// (elements) and so on.
pbBlasStatus pbb_gemm_strided_batched_ex(const pbBlas* s, uintptr_t h, int transa, int transb, int m, int n, int k,
	float alpha, uint64_t a, int atype, int lda, long long stride_a, uint64_t b, int btype, int ldb, long long stride_b,
	float beta, uint64_t c, int ctype, int ldc, long long stride_c, int batch, int compute, int algo);
const char* pbb_get_status_string(const pbBlas* s, pbBlasStatus st);
const char* pbb_get_status_name(const pbBlas* s, pbBlasStatus st);

// ---- NVRTC (libnvrtc.so.N) ----

enum {
	PBR_GET_ERROR_STRING, PBR_VERSION, PBR_CREATE_PROGRAM, PBR_DESTROY_PROGRAM,
	PBR_COMPILE_PROGRAM, PBR_GET_PTX_SIZE, PBR_GET_PTX, PBR_GET_CUBIN_SIZE, PBR_GET_CUBIN,
	PBR_GET_PROGRAM_LOG_SIZE, PBR_GET_PROGRAM_LOG,
	PBR_NUM_SYMS
};

typedef struct pbRtc pbRtc;

pbRtc* pbr_new(void);
void pbr_free(pbRtc* s);
void pbr_set(pbRtc* s, int slot, void* fn);
int pbr_has(const pbRtc* s, int slot);

const char* pbr_get_error_string(const pbRtc* s, pbRtcResult r);
pbRtcResult pbr_version(const pbRtc* s, int* major, int* minor);
pbRtcResult pbr_create_program(const pbRtc* s, uintptr_t* prog, const char* src, const char* name);
pbRtcResult pbr_destroy_program(const pbRtc* s, uintptr_t prog);
pbRtcResult pbr_compile_program(const pbRtc* s, uintptr_t prog, int nopts, const char* const* opts);
pbRtcResult pbr_get_ptx_size(const pbRtc* s, uintptr_t prog, size_t* n);
pbRtcResult pbr_get_ptx(const pbRtc* s, uintptr_t prog, char* out);
pbRtcResult pbr_get_cubin_size(const pbRtc* s, uintptr_t prog, size_t* n);
pbRtcResult pbr_get_cubin(const pbRtc* s, uintptr_t prog, char* out);
pbRtcResult pbr_get_program_log_size(const pbRtc* s, uintptr_t prog, size_t* n);
pbRtcResult pbr_get_program_log(const pbRtc* s, uintptr_t prog, char* out);

// ---- layout facts for the layout test (C's view of what crosses) ----
enum { PBL_DEVPTR, PBL_SIZE_T, PBL_HANDLE, PBL_ARG_SLOT, PBL_ENUM, PBL_MAX_ARGS,
	PBL_APW_SIZE, PBL_APW_BASE, PBL_APW_BYTES, PBL_APW_HIT_RATIO, PBL_APW_HIT_PROP, PBL_APW_MISS_PROP, PBL_STREAM_ATTR_VALUE };
size_t pb_layout(int what);

// ---- cuBLASLt (libcublasLt.so.N): cublasLt.h ----
// cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t and
// cublasLtMatmulPreference_t are opaque pointers (uintptr_t here);
// cublasLtMatmulAlgo_t is 8 uint64_t, passed by pointer; every attribute
// enum is int-sized. Attribute values cross as a uint64_t and the size the
// header gives the attribute (4 or 8 bytes); the wrapper passes a pointer
// to a copy of that size, little-endian.

enum {
	PBLT_CREATE, PBLT_DESTROY, PBLT_DESC_CREATE, PBLT_DESC_DESTROY, PBLT_DESC_SET,
	PBLT_LAYOUT_CREATE, PBLT_LAYOUT_DESTROY, PBLT_LAYOUT_SET,
	PBLT_PREF_CREATE, PBLT_PREF_DESTROY, PBLT_PREF_SET,
	PBLT_HEURISTIC, PBLT_MATMUL, PBLT_GET_VERSION, PBLT_GET_STATUS_STRING,
	PBLT_NUM_SYMS
};

// pbLtHeuristic is cublasLtMatmulHeuristicResult_t: the algorithm (64
// bytes), its workspace, its state, its waves, 4 reserved ints (96 bytes).
typedef struct {
	uint64_t algo[8];
	size_t workspaceSize;
	pbBlasStatus state;
	float wavesCount;
	int reserved[4];
} pbLtHeuristic;

typedef struct pbLt pbLt;

pbLt* pblt_new(void);
void pblt_free(pbLt* s);
void pblt_set(pbLt* s, int slot, void* fn);
int pblt_has(const pbLt* s, int slot);

pbBlasStatus pblt_create(const pbLt* s, uintptr_t* h);
pbBlasStatus pblt_destroy(const pbLt* s, uintptr_t h);
pbBlasStatus pblt_desc_create(const pbLt* s, uintptr_t* d, int compute, int scale);
pbBlasStatus pblt_desc_destroy(const pbLt* s, uintptr_t d);
pbBlasStatus pblt_desc_set(const pbLt* s, uintptr_t d, int attr, uint64_t v, size_t size);
pbBlasStatus pblt_layout_create(const pbLt* s, uintptr_t* l, int type, uint64_t rows, uint64_t cols, int64_t ld);
pbBlasStatus pblt_layout_destroy(const pbLt* s, uintptr_t l);
pbBlasStatus pblt_layout_set(const pbLt* s, uintptr_t l, int attr, uint64_t v, size_t size);
pbBlasStatus pblt_pref_create(const pbLt* s, uintptr_t* p);
pbBlasStatus pblt_pref_destroy(const pbLt* s, uintptr_t p);
pbBlasStatus pblt_pref_set(const pbLt* s, uintptr_t p, int attr, uint64_t v, size_t size);
pbBlasStatus pblt_heuristic(const pbLt* s, uintptr_t h, uintptr_t desc, uintptr_t a, uintptr_t b, uintptr_t c,
	uintptr_t d, uintptr_t pref, int requested, pbLtHeuristic* results, int* returned);
// alpha and beta are float scalars in host memory (scale type CUDA_R_32F,
// host pointer mode); algo points at 8 uint64_t (or is NULL).
pbBlasStatus pblt_matmul(const pbLt* s, uintptr_t h, uintptr_t desc, float alpha, uint64_t a, uintptr_t adesc,
	uint64_t b, uintptr_t bdesc, float beta, uint64_t c, uintptr_t cdesc, uint64_t d, uintptr_t ddesc,
	const uint64_t* algo, uint64_t ws, size_t wsBytes, uintptr_t st);
size_t pblt_get_version(const pbLt* s);
const char* pblt_get_status_string(const pbLt* s, pbBlasStatus st);

// pblt_layout is C's view of pbLtHeuristic for the layout test: 0 its
// size, 1 workspaceSize's offset, 2 state's, 3 wavesCount's.
size_t pblt_layout(int what);

#endif
