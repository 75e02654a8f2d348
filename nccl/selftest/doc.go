// Package selftest holds what the NCCL self-test (partbench nccl-check)
// found, as plain data: exec/ncclcomm.SelfTest fills a Result, report
// renders it.
//
// It must not load or link anything (no cgo), so that report stays free of
// the C boundary.
package selftest
