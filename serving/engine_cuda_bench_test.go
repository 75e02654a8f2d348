//go:build cgo

package serving

import (
	"context"
	"testing"
)

// BenchmarkEngineDecodeFakeCUDA runs one decode iteration of 16 sequences
// (32–47 tokens cached each) through the GPU backend on the fake driver and
// reports launches/iter, the backend's launches per iteration (kernels,
// cuBLAS calls, row copies, memsets: 744, EngineLaunches' count): the
// engine runs each sequence's embedding, attention, row copies and sampling
// on its own, so on a GPU a small model's iteration is bound by the host
// issuing them (docs/measurements/serving.md, "The GPU engine's host-bound
// iterations"). Its
// ns/op is not the host's part alone: the fake cuBLAS computes each GEMM
// on the CPU.
func BenchmarkEngineDecodeFakeCUDA(b *testing.B) {
	ex, _ := fakeCUDAEngine(b, 16, 64)
	defer ex.Close()
	batch := decodeBatch(16, 32)
	ctx := context.Background()
	if err := ex.Run(ctx, batch); err != nil {
		b.Fatal(err)
	}
	before := launches(ex)
	b.ResetTimer()
	for range b.N {
		if err := ex.Run(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(launches(ex)-before)/float64(b.N), "launches/iter")
}

// launches is the GPU backend's launches so far (kernels, cuBLAS calls,
// copies, memsets).
func launches(ex *PassExecutor) int64 {
	n, _ := ex.Launches()
	return n
}
