// Package cblas loads an optimized CBLAS (OpenBLAS, from Debian's
// libopenblas0 packages or wherever the system loader finds it) at run
// time and calls its single-precision GEMM, so the CPU backend computes
// near the machine's BLAS limit without linking any library at build time.
//
// It owns the dlopen of the BLAS library and one C shim per call it makes.
// It must not choose when to use it: exec/cpu does, and says which GEMM ran.
package cblas
