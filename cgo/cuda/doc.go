// Package cuda is partbench's binding to the CUDA driver API, cuBLAS and
// NVRTC: it loads libcuda.so.1, libcublas.so.N and libnvrtc.so.N at run time
// through cgo/dl and calls them through a small static C shim whose
// prototypes are partbench's own, written from the public headers' ABI
// facts (shim.h names each). It covers what partbench's GPU backend needs:
// primary contexts, device attributes and memory, streams, events, module
// loading and kernel launch, graph capture, cublasGemmEx, and NVRTC.
//
// It must not include a CUDA header, link a GPU library at build time, or
// know about partbench's models. Built with CGO_ENABLED=0, Load, LoadCUBLAS,
// LoadNVRTC and the LoadFrom seams return an error wrapping dl.ErrNoCgo.
//
// A CUDA context is current per OS thread: code that calls the driver pins
// its goroutine to its thread and makes the context current first
// ((*Context).Pin), and a stream capture begins and ends on one pinned
// thread.
package cuda
