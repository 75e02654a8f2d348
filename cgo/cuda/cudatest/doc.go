// Package cudatest builds stand-ins for the CUDA driver, cuBLAS and NVRTC:
// small shared libraries compiled with gcc from testdata/*.c into a test's
// temporary folder, with host-memory behaviour and a trace of what crossed
// the ABI (see the comment at the top of each source). Tests of cgo/cuda
// and exec/cuda load them through the LoadFrom seams or the PARTBENCH_*_LIB
// overrides, so every binding path runs on machines without a GPU.
//
// It must not be imported by non-test code.
package cudatest
