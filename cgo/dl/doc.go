// Package dl is partbench's only door to the dynamic loader: it opens shared
// libraries (dlopen), looks up their symbols (dlsym) and searches the places
// where GPU machines keep libnccl, libcuda, libcublas and libnvrtc.
//
// It must not know what a library's symbols mean: bindings (nccl, the CUDA
// bindings) take a *Library and declare their own C prototypes. Nothing else
// in partbench calls dlopen, and nothing links a GPU library at build time.
// Built with CGO_ENABLED=0, every entry point returns ErrNoCgo.
package dl
