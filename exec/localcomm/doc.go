// Package localcomm is an in-process exec.Comm: one communicator per rank,
// ranks running as goroutines of one process, connected by channels. It runs
// commcount's ring all-reduce exactly (chunking, step order, float32 sums in
// that order) and counts every call under the commcount definitions, so
// tests and `--check` compare counted communication with the Program's.
//
// It must not be used across processes (that is the TCP communicator).
package localcomm
