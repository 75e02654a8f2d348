package serving

import (
	"context"
	"fmt"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// BenchmarkEngineDecode times one decode iteration of 16 sequences (each
// at its own position, 32–47 tokens cached) on the CPU backend, batched
// (one pass over the 16 rows) and per sequence (16 passes of one row), on
// the tiny test model (hidden 64) and on the same 8 layers at hidden 512
// (8 heads of 64, 4 KV heads, ffn 1,408), where the batched GEMMs read each
// weight once per iteration instead of once per sequence.
func BenchmarkEngineDecode(b *testing.B) {
	for _, hidden := range []int{64, 512} {
		for _, per := range []bool{false, true} {
			name := fmt.Sprintf("hidden=%d/batched", hidden)
			if per {
				name = fmt.Sprintf("hidden=%d/per-sequence", hidden)
			}
			b.Run(name, func(b *testing.B) {
				cfg, err := configs.Load("test/single-tiny")
				if err != nil {
					b.Fatal(err)
				}
				if hidden != 64 {
					cfg.Model.Hidden, cfg.Model.HeadDim, cfg.Model.FFN = hidden, hidden/cfg.Model.Heads, 1408
				}
				ec, err := EngineConfig(cfg, 16, 64)
				if err != nil {
					b.Fatal(err)
				}
				plan, err := partition.NewPlan(ec)
				if err != nil {
					b.Fatal(err)
				}
				ex, err := NewPassExecutor(plan, "cpu", per)
				if err != nil {
					b.Fatal(err)
				}
				defer ex.Close()
				batch := decodeBatch(16, 32)
				ctx := context.Background()
				b.ResetTimer()
				for range b.N {
					if err := ex.Run(ctx, batch); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N)/16*1e6, "µs/seq")
			})
		}
	}
}

// decodeBatch is an iteration's batch of n sequences decoding one token
// each, sequence i with past+i tokens cached (prompt past+i, 8 to output).
func decodeBatch(n, past int) []Scheduled {
	seqs := make([]Seq, n)
	batch := make([]Scheduled, n)
	for i := range seqs {
		seqs[i] = Seq{Req: Request{ID: i, InputLen: past + i, OutputLen: 8}}
		batch[i] = Scheduled{Seq: &seqs[i], Q: 1, Past: past + i, Sample: true}
	}
	return batch
}
