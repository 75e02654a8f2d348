package configs

import "fmt"

// WorkloadOverrides are the workload flags of model and search, named as
// vLLM's benchmark_latency names them: --batch-size, --input-len (prompt
// tokens) and --output-len (generated tokens). Zero leaves the config's
// value.
type WorkloadOverrides struct {
	Batch, InputLen, OutputLen int
}

// Set says whether any override is given.
func (w WorkloadOverrides) Set() bool { return w.Batch != 0 || w.InputLen != 0 || w.OutputLen != 0 }

// Apply sets cfg's workload: batch, and context = prompt + output tokens
// with the prompt and output each the flag's or the config's. It refuses
// negative values and a batch the config's micro-batch count does not
// divide, naming the flag, then validates cfg.
func (w WorkloadOverrides) Apply(cfg *Config) error {
	for _, f := range []struct {
		flag string
		v    int
	}{{"--batch-size", w.Batch}, {"--input-len", w.InputLen}, {"--output-len", w.OutputLen}} {
		if f.v < 0 {
			return fmt.Errorf("%s: must be ≥ 1 (got %d; 0 keeps the config's)", f.flag, f.v)
		}
	}
	if !w.Set() {
		return nil
	}
	wl := &cfg.Workload
	prompt, output := wl.Context-wl.OutputTokens, wl.OutputTokens
	if w.InputLen > 0 {
		prompt = w.InputLen
	}
	if w.OutputLen > 0 {
		output = w.OutputLen
	}
	if w.Batch > 0 {
		if m := cfg.Parallel.Microbatches; m > 0 && w.Batch%m != 0 {
			return fmt.Errorf("--batch-size %d: config %s splits the batch into %d micro-batches (parallel.microbatches), which must divide it", w.Batch, cfg.Name, m)
		}
		wl.Batch = w.Batch
	}
	wl.Context, wl.OutputTokens = prompt+output, output
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--batch-size/--input-len/--output-len on config %s: %w", cfg.Name, err)
	}
	return nil
}
