// Package checkpointtest finds the checkpoint fixtures of
// checkpoint/testdata (tiny HuggingFace model directories) from any
// package's tests, and reads the transformers reference kept beside each.
//
// It must not be imported by non-test code, and imports nothing of
// partbench, so that every package's tests (configs' and checkpoint's own
// included) may use it.
package checkpointtest
