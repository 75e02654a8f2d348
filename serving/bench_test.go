package serving

import (
	"math"
	"testing"

	"github.com/partbench/partbench/sim"
)

// benchServing simulates n requests of Llama-2-7B on one H100 (1,024
// prompt and 128 output tokens, chunked prefill, 256 sequences, 8,192
// batched tokens) at 40 req/s, over twice the replica's ≈ 17 req/s: the
// queue grows for the whole run, the batch stays full and the KV cache
// preempts. It reports the simulated iterations, the time per iteration
// and per sequence-iteration (a batch of 256 costs more than one of 8).
func benchServing(b *testing.B, n int) {
	p, err := partitionPlan("testdata/llama2-7b-h100.toml")
	if err != nil {
		b.Fatal(err)
	}
	kv, err := KVBlocks(p, 16, 0.9)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 256, MaxNumBatchedTokens: 8192, BlockSize: 16, NumBlocks: kv.NumBlocks},
		Replicas: 1, Router: RouterRoundRobin}
	reqs, err := Generate(Spec{NumPrompts: n, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: 40},
		Lengths: Lengths{InputLen: 1024, OutputLen: 128}, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var iters int
	var steps int64
	for b.Loop() {
		im, err := sim.NewIterationModel(p, sim.Options{})
		if err != nil {
			b.Fatal(err)
		}
		res, err := Simulate(reqs, cfg, im)
		if err != nil {
			b.Fatal(err)
		}
		m := Summarize(res, []float64{99}, Goodput{})
		if m.Completed != n || math.IsNaN(m.TTFT.MeanMs) {
			b.Fatalf("%d of %d completed", m.Completed, n)
		}
		iters, steps = res.Iterations, res.SeqSteps
	}
	b.ReportMetric(float64(iters), "iterations")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(iters), "ns/iteration")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/seq-step")
}

func BenchmarkServing100k(b *testing.B) { benchServing(b, 100_000) }
func BenchmarkServing10k(b *testing.B)  { benchServing(b, 10_000) }
