package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/report"
)

// addModelDirFlags adds --model-dir and the flags that shape its run
// (configs.ModelDirRun) to a command.
func addModelDirFlags(f *pflag.FlagSet, dir *string, r *configs.ModelDirRun) {
	f.StringVar(dir, "model-dir", "", "Hugging Face model directory: the model's shape from its config.json (instead of --config)")
	f.IntVar(&r.TP, "tp", 1, "with --model-dir: tensor-parallel ranks")
	f.IntVar(&r.PP, "pp", 1, "with --model-dir: pipeline stages")
	f.IntVar(&r.Microbatches, "microbatches", 1, "with --model-dir: pipeline micro-batches")
	f.IntVar(&r.Batch, "batch", 1, "with --model-dir: sequences per batch")
	f.IntVar(&r.Context, "context", 0, "with --model-dir: tokens per sequence, prompt and output (0: 2048, at most the model's positions)")
	f.IntVar(&r.OutputTokens, "output-tokens", 0, "with --model-dir: generated tokens per sequence (0: 128, at most half the context)")
	f.BoolVar(&r.Encoder, "encoder", false, "with --model-dir: run the model as an encoder (bidirectional attention, one forward pass)")
}

// modelDirFlagNames are the flags addModelDirFlags adds besides --model-dir.
var modelDirFlagNames = []string{"tp", "pp", "microbatches", "batch", "context", "output-tokens", "encoder"}

// checkModelDirFlags refuses the run-shaping flags without --model-dir:
// they would not act.
func checkModelDirFlags(f *pflag.FlagSet, dir string) error {
	if dir != "" {
		return nil
	}
	for _, n := range modelDirFlagNames {
		if f.Changed(n) {
			return fmt.Errorf("--%s: only with --model-dir (a config file gives its own %s)", n, n)
		}
	}
	return nil
}

// checkModelDirRanks is the most ranks `run --check --model-dir` checks.
const checkModelDirRanks = 8

// runCheckModelDir checks every partitioning the model directory's shape
// allows against one rank with the checkpoint's weights: on the CPU (auto,
// cpu) against the CPU's single rank; on the GPU (cuda, in --dtype), the
// single rank and every partitioning against the CPU's single rank.
func (o *runOptions) runCheckModelDir(ctx context.Context, stdout io.Writer) error {
	switch {
	case !o.check:
		return errors.New("run: --model-dir: only with --check (every partitioning against one rank); to decode a checkpoint, partbench generate --model-dir")
	case o.config != "":
		return errors.New("run: --model-dir and --config: give one (the model directory's config.json is the model)")
	case o.backend != "auto" && o.backend != configs.BackendCPU && o.backend != configs.BackendCUDA:
		return fmt.Errorf("run: --check --model-dir --backend %q: must be auto, cpu or cuda", o.backend)
	}
	// Every rank runs in this process.
	env := launch.Env{Size: 1, LocalSize: 1, Source: launch.SourceSingle}
	hfBackend := func(name, dtype string) (hf.Backend, error) {
		b, err := o.backends.ForRun(name)
		if err != nil {
			return hf.Backend{}, err
		}
		if b.Checkpoint == nil {
			return hf.Backend{}, fmt.Errorf("--backend %s reads no checkpoints", name)
		}
		window := "" // the reference's CPU backend takes none
		if name == configs.BackendCUDA {
			window = o.hostWindow
		}
		co, err := checkpointOptions(dtype, window)
		if err != nil {
			return hf.Backend{}, err
		}
		return b.Checkpoint(co, env)
	}
	if o.hostWindow != "" && o.backend != configs.BackendCUDA {
		return fmt.Errorf("run: --check --model-dir --host-window %q: only with --backend cuda (the CPU backend holds every weight in host memory)", o.hostWindow)
	}
	ref, err := hfBackend(configs.BackendCPU, "")
	if err != nil {
		return err
	}
	co := hf.CheckOptions{Backend: ref}
	if o.backend == configs.BackendCUDA {
		gpu, err := hfBackend(configs.BackendCUDA, o.dtype)
		if err != nil {
			return fmt.Errorf("run --check --model-dir --backend cuda: %w", err)
		}
		co = hf.CheckOptions{Backend: gpu, Reference: &ref}
	} else if o.dtype != "" && o.dtype != "fp32" {
		return fmt.Errorf("run: --check --model-dir --dtype %q: only with --backend cuda (the CPU computes in fp32)", o.dtype)
	}
	dir, err := filepath.Abs(o.modelDir)
	if err != nil {
		return err
	}
	// Two sequences of 16 positions: enough for two micro-batches, a
	// multi-position prefill and decode steps with a KV cache.
	run := configs.ModelDirRun{Dir: dir, Batch: 2, Context: 16, OutputTokens: 4, DType: "fp32", Encoder: o.encoder}
	results, err := hf.CheckModelDir(ctx, run, checkModelDirRanks, co)
	if err != nil {
		return err
	}
	return report.WriteChecks(stdout, o.format, "run --check --model-dir", version, results...)
}
