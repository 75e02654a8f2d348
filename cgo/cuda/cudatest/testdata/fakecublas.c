// A fake cuBLAS for partbench's binding tests, built by the tests with gcc.
// cublasGemmEx records its arguments and, for CUDA_R_32F operands, really
// computes the column-major product on host memory (the fake driver's
// device memory is host memory), so a test can check the row-major
// transposition trick numerically. cublasGetStatusString(TRACE) returns the
// last call's arguments. -DFAKE_OLD drops cublasSetWorkspace_v2 and the
// status-string calls (cuBLAS before 11.4).
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;
enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, NOT_SUPPORTED = 15, TRACE = 0x7ffffff0 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char trace[1024];
#ifndef FAKE_OLD
static char traceOut[1024];
#endif

static void note(const char* fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&mu);
	vsnprintf(trace, sizeof trace, fmt, ap);
	pthread_mutex_unlock(&mu);
	va_end(ap);
}

struct handle { void* stream; void* ws; size_t wsBytes; int math; };

cublasStatus_t cublasCreate_v2(void** h) { *h = calloc(1, sizeof(struct handle)); return OK; }
cublasStatus_t cublasDestroy_v2(void* h) { free(h); return OK; }
cublasStatus_t cublasGetVersion_v2(void* h, int* v) { if (!h) return NOT_INITIALIZED; *v = 130100; return OK; }
cublasStatus_t cublasSetStream_v2(void* h, void* st) {
	((struct handle*)h)->stream = st;
	note("cublasSetStream_v2(stream=%p)", st);
	return OK;
}
#ifndef FAKE_OLD
cublasStatus_t cublasSetWorkspace_v2(void* h, void* ws, size_t n) {
	((struct handle*)h)->ws = ws;
	((struct handle*)h)->wsBytes = n;
	note("cublasSetWorkspace_v2(bytes=%zu)", n);
	return OK;
}
#endif
cublasStatus_t cublasSetMathMode(void* h, int mode) { ((struct handle*)h)->math = mode; return OK; }

// C[m×n] = alpha·op(A)·op(B) + beta·C, column-major, fp32 only.
cublasStatus_t cublasGemmEx(void* h, int ta, int tb, int m, int n, int k, const void* alpha,
	const void* A, int at, int lda, const void* B, int bt, int ldb, const void* beta,
	void* C, int ct, int ldc, int compute, int algo) {
	if (h == NULL) return NOT_INITIALIZED;
	if (m < 0 || n < 0 || k < 0) return INVALID_VALUE;
	float al = *(const float*)alpha, be = *(const float*)beta;
	note("cublasGemmEx(ta=%d, tb=%d, m=%d, n=%d, k=%d, alpha=%g, atype=%d, lda=%d, btype=%d, ldb=%d, "
		"beta=%g, ctype=%d, ldc=%d, compute=%d, algo=%d)",
		ta, tb, m, n, k, (double)al, at, lda, bt, ldb, (double)be, ct, ldc, compute, algo);
	if (lda < (ta ? k : m) || ldb < (tb ? n : k) || ldc < m) return INVALID_VALUE;
	if (at != 0 || bt != 0 || ct != 0) return OK; // 16-bit types: recorded only
	const float *a = A, *b = B;
	float* c = C;
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			float s = 0;
			for (int p = 0; p < k; p++) {
				float x = ta ? a[p + i * lda] : a[i + p * lda];
				float y = tb ? b[j + p * ldb] : b[p + j * ldb];
				s += x * y;
			}
			c[i + j * ldc] = al * s + (be == 0 ? 0 : be * c[i + j * ldc]);
		}
	}
	return OK;
}

#ifndef FAKE_OLD
// cublasGemmStridedBatchedEx: batch cublasGemmEx calls at strided
// operands (fp32 computed, 16-bit recorded only), the trace naming the
// strides and the batch.
cublasStatus_t cublasGemmStridedBatchedEx(void* h, int ta, int tb, int m, int n, int k, const void* alpha,
	const void* A, int at, int lda, long long sa, const void* B, int bt, int ldb, long long sb, const void* beta,
	void* C, int ct, int ldc, long long sc, int batch, int compute, int algo) {
	if (h == NULL) return NOT_INITIALIZED;
	if (batch < 0) return INVALID_VALUE;
	const int esa = at == 0 ? 4 : 2, esb = bt == 0 ? 4 : 2, esc = ct == 0 ? 4 : 2;
	for (int i = 0; i < batch; i++) {
		cublasStatus_t r = cublasGemmEx(h, ta, tb, m, n, k, alpha, (const char*)A + i * sa * esa, at, lda,
			(const char*)B + i * sb * esb, bt, ldb, beta, (char*)C + i * sc * esc, ct, ldc, compute, algo);
		if (r != OK) return r;
	}
	note("cublasGemmStridedBatchedEx(ta=%d, tb=%d, m=%d, n=%d, k=%d, alpha=%g, atype=%d, lda=%d, strideA=%lld, btype=%d, ldb=%d, "
		"strideB=%lld, beta=%g, ctype=%d, ldc=%d, strideC=%lld, batch=%d, compute=%d, algo=%d)",
		ta, tb, m, n, k, (double)*(const float*)alpha, at, lda, sa, bt, ldb, sb, (double)*(const float*)beta, ct, ldc, sc, batch, compute, algo);
	return OK;
}

const char* cublasGetStatusString(cublasStatus_t s) {
	switch (s) {
	case OK: return "fake: success";
	case INVALID_VALUE: return "fake: an invalid numeric value was used as an argument";
	case TRACE:
		pthread_mutex_lock(&mu);
		memcpy(traceOut, trace, sizeof trace);
		pthread_mutex_unlock(&mu);
		return traceOut;
	}
	return "fake: unknown status";
}
const char* cublasGetStatusName(cublasStatus_t s) { return s == OK ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_OTHER"; }
#endif
