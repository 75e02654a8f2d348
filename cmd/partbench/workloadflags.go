package main

import (
	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
)

// addWorkloadFlags registers the workload flags of model and search with
// vLLM benchmark_latency's names (--batch-size, --input-len, --output-len).
// They apply to a --model-dir run's workload too (model's --batch,
// --context and --output-tokens are --model-dir's own spellings).
func addWorkloadFlags(f *pflag.FlagSet, w *configs.WorkloadOverrides) {
	f.IntVar(&w.Batch, "batch-size", 0, "sequences per batch (default: the config's workload.batch)")
	f.IntVar(&w.InputLen, "input-len", 0, "prompt tokens per sequence (default: the config's context − output_tokens)")
	f.IntVar(&w.OutputLen, "output-len", 0, "generated tokens per sequence (default: the config's workload.output_tokens)")
}
