// A fake cuBLASLt for partbench's binding tests, built by the tests with
// gcc. It keeps every descriptor it hands out and refuses what cuBLASLt
// refuses: null handles, descriptors and operands, an attribute value of
// the wrong size, a column-major leading dimension below the rows,
// operand shapes that do not make a product, a requested count ≤ 0, a
// workspace smaller than the algorithm's; it answers NOT_SUPPORTED for
// element types, compute types and epilogues it does not implement. For
// CUDA_R_32F operands cublasLtMatmul really computes the column-major
// product with its epilogue on host memory (the fake driver's device
// memory is host memory): the bias added to each row of D, GELU as the
// tanh approximation. 16-bit products are recorded only.
// cublasLtGetStatusString(TRACE) returns the last call's arguments and
// the count of matmuls. -DFAKE_LT_NO_ALGO makes the heuristic find no
// algorithm (CUBLAS_STATUS_NOT_SUPPORTED, none returned); -DFAKE_LT_GELU_ERF
// makes the GELU epilogues compute erf's GELU instead.
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;
enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, NOT_SUPPORTED = 15, TRACE = 0x7ffffff0 };
enum { R32F = 0, R16F = 2, R16BF = 14, COMPUTE_32F = 68, COMPUTE_32F_PEDANTIC = 69 };
enum { EPI_DEFAULT = 1, EPI_BIAS = 4, EPI_GELU = 32, EPI_GELU_BIAS = 36 };
enum { MAGIC_H = 0x4c5448, MAGIC_D = 0x4c5444, MAGIC_L = 0x4c544c, MAGIC_P = 0x4c5450, MAGIC_ALGO = 0x4c5441 };
#define ALGO_WS 1024 // the workspace the fake algorithm asks for when the preference allows it

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char trace[1024], traceOut[1024];
static long matmuls;

static void note(const char* fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&mu);
	vsnprintf(trace, sizeof trace, fmt, ap);
	pthread_mutex_unlock(&mu);
	va_end(ap);
}

struct handle { int magic; };
struct desc { int magic, compute, scale, transa, transb; uint32_t epilogue; const void* bias; };
struct layout { int magic, type, order; uint64_t rows, cols; int64_t ld; };
struct pref { int magic; uint64_t maxWs; uint32_t align[4]; };
typedef struct { uint64_t algo[8]; size_t workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4]; } heuristic;

cublasStatus_t cublasLtCreate(void** h) {
	if (!h) return INVALID_VALUE;
	struct handle* p = calloc(1, sizeof *p);
	p->magic = MAGIC_H;
	*h = p;
	return OK;
}
cublasStatus_t cublasLtDestroy(void* h) {
	if (!h || ((struct handle*)h)->magic != MAGIC_H) return NOT_INITIALIZED;
	((struct handle*)h)->magic = 0;
	free(h);
	return OK;
}
size_t cublasLtGetVersion(void) { return 130100; }

cublasStatus_t cublasLtMatmulDescCreate(void** d, int compute, int scale) {
	if (!d) return INVALID_VALUE;
	if (compute != COMPUTE_32F && compute != COMPUTE_32F_PEDANTIC) return NOT_SUPPORTED;
	if (scale != R32F) return INVALID_VALUE; // CUBLAS_COMPUTE_32F scales in fp32
	struct desc* p = calloc(1, sizeof *p);
	*p = (struct desc){.magic = MAGIC_D, .compute = compute, .scale = scale, .epilogue = EPI_DEFAULT};
	*d = p;
	return OK;
}
cublasStatus_t cublasLtMatmulDescDestroy(void* d) {
	if (!d || ((struct desc*)d)->magic != MAGIC_D) return INVALID_VALUE;
	((struct desc*)d)->magic = 0;
	free(d);
	return OK;
}
// Attribute sizes from cublasLt.h: int32/uint32 4 bytes, pointers 8.
cublasStatus_t cublasLtMatmulDescSetAttribute(void* d, int attr, const void* buf, size_t n) {
	struct desc* p = d;
	if (!p || p->magic != MAGIC_D || !buf) return INVALID_VALUE;
	switch (attr) {
	case 3: if (n != 4) return INVALID_VALUE; p->transa = *(const int32_t*)buf; break;
	case 4: if (n != 4) return INVALID_VALUE; p->transb = *(const int32_t*)buf; break;
	case 7: if (n != 4) return INVALID_VALUE; p->epilogue = *(const uint32_t*)buf; break;
	case 8: if (n != 8) return INVALID_VALUE; p->bias = *(const void* const*)buf; break;
	case 0: case 1: case 2: if (n != 4) return INVALID_VALUE; break;
	default: return INVALID_VALUE;
	}
	note("cublasLtMatmulDescSetAttribute(attr=%d, bytes=%zu)", attr, n);
	return OK;
}

cublasStatus_t cublasLtMatrixLayoutCreate(void** l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	if (!l) return INVALID_VALUE;
	if (ld < 0 || (uint64_t)ld < rows) return INVALID_VALUE; // column-major: ld ≥ rows
	struct layout* p = calloc(1, sizeof *p);
	*p = (struct layout){.magic = MAGIC_L, .type = type, .rows = rows, .cols = cols, .ld = ld};
	*l = p;
	return OK;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(void* l) {
	if (!l || ((struct layout*)l)->magic != MAGIC_L) return INVALID_VALUE;
	((struct layout*)l)->magic = 0;
	free(l);
	return OK;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(void* l, int attr, const void* buf, size_t n) {
	struct layout* p = l;
	if (!p || p->magic != MAGIC_L || !buf) return INVALID_VALUE;
	if (attr != 1 || n != 4) return INVALID_VALUE; // only ORDER, int32
	int32_t o = *(const int32_t*)buf;
	if (o < 0 || o > 4) return INVALID_VALUE;
	p->order = o;
	return OK;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(void** pr) {
	if (!pr) return INVALID_VALUE;
	struct pref* p = calloc(1, sizeof *p);
	*p = (struct pref){.magic = MAGIC_P, .align = {256, 256, 256, 256}};
	*pr = p;
	return OK;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(void* pr) {
	if (!pr || ((struct pref*)pr)->magic != MAGIC_P) return INVALID_VALUE;
	((struct pref*)pr)->magic = 0;
	free(pr);
	return OK;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(void* pr, int attr, const void* buf, size_t n) {
	struct pref* p = pr;
	if (!p || p->magic != MAGIC_P || !buf) return INVALID_VALUE;
	if (attr == 1) {
		if (n != 8) return INVALID_VALUE;
		p->maxWs = *(const uint64_t*)buf;
		return OK;
	}
	if (attr >= 5 && attr <= 8) {
		if (n != 4) return INVALID_VALUE;
		p->align[attr - 5] = *(const uint32_t*)buf;
		return OK;
	}
	return INVALID_VALUE;
}

static int dtypeOK(int t) { return t == R32F || t == R16F || t == R16BF; }
static int epilogueOK(uint32_t e) { return e == EPI_DEFAULT || e == EPI_BIAS || e == EPI_GELU || e == EPI_GELU_BIAS; }

// shapeOf checks the descriptors make a product; it returns OK or the status.
static cublasStatus_t shapeOf(const struct desc* d, const struct layout* a, const struct layout* b,
	const struct layout* c, const struct layout* dd, uint64_t* m, uint64_t* n, uint64_t* k) {
	if (!d || d->magic != MAGIC_D || !a || a->magic != MAGIC_L || !b || b->magic != MAGIC_L ||
		!c || c->magic != MAGIC_L || !dd || dd->magic != MAGIC_L)
		return INVALID_VALUE;
	if (a->order || b->order || c->order || dd->order) return NOT_SUPPORTED; // the fake keeps to column-major
	*m = d->transa ? a->cols : a->rows;
	*k = d->transa ? a->rows : a->cols;
	uint64_t kb = d->transb ? b->cols : b->rows;
	*n = d->transb ? b->rows : b->cols;
	if (kb != *k || c->rows != *m || c->cols != *n || dd->rows != *m || dd->cols != *n) return INVALID_VALUE;
	if (!dtypeOK(a->type) || a->type != b->type || c->type != a->type || dd->type != a->type) return NOT_SUPPORTED;
	if (!epilogueOK(d->epilogue)) return NOT_SUPPORTED;
	if ((d->epilogue & EPI_BIAS) && d->bias == NULL) return INVALID_VALUE;
	return OK;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(void* h, void* desc, void* a, void* b, void* c, void* d, void* pr,
	int requested, heuristic* res, int* returned) {
	if (!h || ((struct handle*)h)->magic != MAGIC_H) return NOT_INITIALIZED;
	if (requested <= 0 || !res || !returned || !pr || ((struct pref*)pr)->magic != MAGIC_P) return INVALID_VALUE;
	uint64_t m, n, k;
	cublasStatus_t r = shapeOf(desc, a, b, c, d, &m, &n, &k);
	*returned = 0;
	if (r != OK) return r;
	const struct desc* dd = desc;
	const struct pref* p = pr;
	note("cublasLtMatmulAlgoGetHeuristic(m=%llu, n=%llu, k=%llu, type=%d, epilogue=%u, maxWs=%llu, align=%u/%u/%u/%u)",
		(unsigned long long)m, (unsigned long long)n, (unsigned long long)k, ((struct layout*)a)->type, dd->epilogue,
		(unsigned long long)p->maxWs, p->align[0], p->align[1], p->align[2], p->align[3]);
#ifdef FAKE_LT_NO_ALGO
	return NOT_SUPPORTED;
#else
	memset(res, 0, sizeof *res);
	res->algo[0] = MAGIC_ALGO;
	res->workspaceSize = res->algo[1] = p->maxWs >= ALGO_WS ? ALGO_WS : 0;
	res->state = OK;
	res->wavesCount = 1.0f;
	*returned = 1;
	return OK;
#endif
}

cublasStatus_t cublasLtMatmul(void* h, void* desc, const void* alpha, const void* A, void* adesc, const void* B, void* bdesc,
	const void* beta, const void* C, void* cdesc, void* D, void* ddesc, const uint64_t* algo, void* ws, size_t wsBytes, void* stream) {
	if (!h || ((struct handle*)h)->magic != MAGIC_H) return NOT_INITIALIZED;
	uint64_t m, n, k;
	cublasStatus_t r = shapeOf(desc, adesc, bdesc, cdesc, ddesc, &m, &n, &k);
	if (r != OK) return r;
	if (!alpha || !beta || !A || !B || !D) return INVALID_VALUE;
	if (algo && algo[0] != MAGIC_ALGO) return INVALID_VALUE;
	if (algo && wsBytes < algo[1]) return INVALID_VALUE;
	if (wsBytes > 0 && !ws) return INVALID_VALUE;
	const struct desc* d = desc;
	const struct layout *la = adesc, *lb = bdesc, *lc = cdesc, *ld = ddesc;
	float al = *(const float*)alpha, be = *(const float*)beta;
	pthread_mutex_lock(&mu);
	long count = ++matmuls;
	pthread_mutex_unlock(&mu);
	note("cublasLtMatmul#%ld(ta=%d, tb=%d, m=%llu, n=%llu, k=%llu, alpha=%g, beta=%g, type=%d, lda=%lld, ldb=%lld, ldd=%lld, "
		"epilogue=%u, ws=%zu, stream=%p)", count, d->transa, d->transb, (unsigned long long)m, (unsigned long long)n,
		(unsigned long long)k, (double)al, (double)be, la->type, (long long)la->ld, (long long)lb->ld, (long long)ld->ld,
		d->epilogue, wsBytes, stream);
	if (la->type != R32F) return OK; // 16-bit types: recorded only
	const float *a = A, *b = B, *c = C, *bias = d->bias;
	float* out = D;
	for (uint64_t j = 0; j < n; j++) {
		for (uint64_t i = 0; i < m; i++) {
			float s = 0;
			for (uint64_t p = 0; p < k; p++) {
				float x = d->transa ? a[p + i * la->ld] : a[i + p * la->ld];
				float y = d->transb ? b[j + p * lb->ld] : b[p + j * lb->ld];
				s += x * y;
			}
			float v = al * s + (be == 0 || !c ? 0 : be * c[i + j * lc->ld]);
			if (d->epilogue & EPI_BIAS) v += bias[i];
#ifdef FAKE_LT_GELU_ERF
			if (d->epilogue & EPI_GELU) v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
#else
			if (d->epilogue & EPI_GELU) v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
#endif
			out[i + j * ld->ld] = v;
		}
	}
	return OK;
}

const char* cublasLtGetStatusString(cublasStatus_t s) {
	switch (s) {
	case OK: return "fake: success";
	case INVALID_VALUE: return "fake: an invalid numeric value was used as an argument";
	case NOT_SUPPORTED: return "fake: the functionality requested is not supported";
	case TRACE:
		pthread_mutex_lock(&mu);
		memcpy(traceOut, trace, sizeof trace);
		pthread_mutex_unlock(&mu);
		return traceOut;
	}
	return "fake: unknown status";
}
