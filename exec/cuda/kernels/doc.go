// Package kernels holds the CUDA C++ source of partbench's GPU kernels:
// one .cu file per group of kernels and the .cuh headers they share,
// embedded in the binary. NVRTC (exec/cuda), the compile gate
// (make kernel-check) and the host-emulation harness (exec/cuda/hostemu)
// all read this same text. It compiles nothing and knows no GPU.
package kernels
