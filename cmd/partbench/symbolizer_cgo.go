//go:build cgo

package main

// A crash inside the C libraries (libcuda, NCCL) prints a symbolized C
// stack beside the Go one.
import _ "github.com/ianlancetaylor/cgosymbolizer"
