//go:build cgo

package serving

import (
	"context"
	"testing"

	xcuda "github.com/partbench/partbench/exec/cuda"
)

// BenchmarkEngineDecodeFakeCUDA runs one decode iteration of 16 sequences
// (32–47 tokens cached each) through the GPU backend on the fake driver and
// reports launches/iter, the backend's kernel launches per iteration: the
// engine runs each sequence's embedding, attention, row copies and sampling
// on its own, so on a GPU a small model's iteration is bound by the host
// issuing them (440 launches at about 9 µs each on an H200: 3.8–4.5 ms a
// token, docs/measurements/gpu-check-h200-2026-11-26/tenth-call/). Its
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

// launches is the GPU backend's kernel launches so far.
func launches(ex *PassExecutor) int64 {
	c, ok := ex.c.(interface{ LaunchStats() xcuda.LaunchStats })
	if !ok {
		return 0
	}
	return int64(c.LaunchStats().Launches)
}
