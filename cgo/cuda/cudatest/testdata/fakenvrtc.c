// A fake NVRTC for partbench's binding tests, built by the tests with gcc.
// Compilation succeeds unless the source contains "#error"; then the log
// carries a compiler-style message. The PTX returned is "FAKE PTX <name>
// opts: <options>" (so the fake driver loads it and a test sees the
// options that crossed), the cubin "FAKE CUBIN <name> opts: <options>" —
// only after a real-architecture (sm_XX) compilation, as in NVRTC.
// -DFAKE_OLD drops the CUBIN calls (NVRTC before 11.1).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult;
enum { OK = 0, INVALID_INPUT = 3, INVALID_PROGRAM = 4, INVALID_OPTION = 5, COMPILATION = 6 };

struct prog { char* src; char name[64]; char opts[1024]; char log[512]; int compiled, real; char out[2048]; };

const char* nvrtcGetErrorString(nvrtcResult r) {
	switch (r) {
	case OK: return "NVRTC_SUCCESS";
	case COMPILATION: return "NVRTC_ERROR_COMPILATION";
	case INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
	case INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
	}
	return "NVRTC_ERROR unknown";
}

nvrtcResult nvrtcVersion(int* major, int* minor) { *major = 13; *minor = 0; return OK; }

nvrtcResult nvrtcCreateProgram(void** p, const char* src, const char* name, int nh, const char* const* h, const char* const* in) {
	(void)h; (void)in;
	if (src == NULL || nh != 0) return INVALID_INPUT;
	struct prog* g = calloc(1, sizeof *g);
	g->src = strdup(src);
	snprintf(g->name, sizeof g->name, "%s", name ? name : "default_program");
	*p = g;
	return OK;
}

nvrtcResult nvrtcDestroyProgram(void** p) {
	struct prog* g = *p;
	if (g == NULL) return INVALID_PROGRAM;
	free(g->src);
	free(g);
	*p = NULL;
	return OK;
}

nvrtcResult nvrtcCompileProgram(void* p, int n, const char* const* opts) {
	struct prog* g = p;
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		if (strncmp(opts[i], "-", 1) != 0) return INVALID_OPTION;
		if (strstr(opts[i], "=sm_")) g->real = 1;
		off += snprintf(g->opts + off, sizeof g->opts - off, "%s%s", i ? " " : "", opts[i]);
	}
	if (strstr(g->src, "#error")) {
		snprintf(g->log, sizeof g->log, "%s(1): error: #error directive: fake failure\n1 error detected in the compilation of \"%s\".\n", g->name, g->name);
		return COMPILATION;
	}
	g->compiled = 1;
	return OK;
}

static void output(struct prog* g, const char* kind) {
	snprintf(g->out, sizeof g->out, "FAKE %s %s opts: %s", kind, g->name, g->opts);
}

nvrtcResult nvrtcGetPTXSize(void* p, size_t* n) {
	struct prog* g = p;
	if (!g->compiled || g->real) return INVALID_PROGRAM;
	output(g, "PTX");
	*n = strlen(g->out) + 1;
	return OK;
}
nvrtcResult nvrtcGetPTX(void* p, char* out) {
	struct prog* g = p;
	if (!g->compiled || g->real) return INVALID_PROGRAM;
	output(g, "PTX");
	memcpy(out, g->out, strlen(g->out) + 1);
	return OK;
}
#ifndef FAKE_OLD
nvrtcResult nvrtcGetCUBINSize(void* p, size_t* n) {
	struct prog* g = p;
	if (!g->compiled || !g->real) return INVALID_PROGRAM;
	output(g, "CUBIN");
	*n = strlen(g->out) + 1;
	return OK;
}
nvrtcResult nvrtcGetCUBIN(void* p, char* out) {
	struct prog* g = p;
	if (!g->compiled || !g->real) return INVALID_PROGRAM;
	output(g, "CUBIN");
	memcpy(out, g->out, strlen(g->out) + 1);
	return OK;
}
#endif
nvrtcResult nvrtcGetProgramLogSize(void* p, size_t* n) { *n = strlen(((struct prog*)p)->log) + 1; return OK; }
nvrtcResult nvrtcGetProgramLog(void* p, char* out) { strcpy(out, ((struct prog*)p)->log); return OK; }
