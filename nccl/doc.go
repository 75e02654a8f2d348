// Package nccl is partbench's binding to the NCCL library and the counter of
// its calls: it loads libnccl.so.2 at run time through cgo/dl, calls the
// entry points through a small static C shim, counts every call, payload
// byte and ring-equivalent message in a commcount.Counter, and watches a
// communicator for asynchronous errors so a rank whose peer died gets out.
//
// It must not depend on exec, include an NCCL or CUDA header, or link a GPU
// library at build time; its C prototypes are its own, from the public ABI.
// Built with CGO_ENABLED=0, Load and LoadFrom return an error wrapping
// dl.ErrNoCgo, and nothing else can be reached.
package nccl
