package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/report"
)

type generateOptions struct {
	modelDir, idsFile, logitsOut, format, backend, dtype string
	newTokens, tp, pp, microbatches                      int
}

func newGenerateCmd() *cobra.Command {
	o := &generateOptions{}
	cmd := &cobra.Command{
		Use:   "generate --model-dir DIR --ids-file prompts.json",
		Short: "Greedy decoding of a Hugging Face checkpoint under a partitioning (in-process ranks, CPU backend)",
		Long: `generate reads a model directory in the Hugging Face layout (config.json and
safetensors), runs the prompts of --ids-file (a JSON list of token-id lists of
one length) under TP × PP in-process ranks on the CPU backend, each rank reading
only its own slices, and prints {"greedy_ids": [[…], …]}. --logits-out writes
the logits at every prompt position as [sequence][position][vocab].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGenerate(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.modelDir, "model-dir", "", "Hugging Face model directory (config.json + model.safetensors or sharded)")
	f.StringVar(&o.idsFile, "ids-file", "", "JSON list of token-id lists, one per sequence")
	f.IntVar(&o.newTokens, "new-tokens", 16, "tokens to generate per sequence")
	f.IntVar(&o.tp, "tp", 1, "tensor-parallel ranks")
	f.IntVar(&o.pp, "pp", 1, "pipeline stages")
	f.IntVar(&o.microbatches, "microbatches", 1, "pipeline micro-batches (must divide the number of prompts)")
	f.StringVar(&o.logitsOut, "logits-out", "", "write the logits at every prompt position to this JSON file")
	cliflag.Format(f, &o.format, cliflag.JSON)
	f.StringVar(&o.backend, "backend", "cpu", "compute backend: cpu")
	f.StringVar(&o.dtype, "dtype", "fp32", "element type: fp32")
	return cmd
}

func runGenerate(cmd *cobra.Command, o *generateOptions) error {
	switch {
	case o.modelDir == "":
		return &exitError{2, errors.New("generate: --model-dir is required")}
	case o.idsFile == "":
		return &exitError{2, errors.New("generate: --ids-file is required")}
	case o.format != "json":
		return &exitError{2, fmt.Errorf("generate: --format %q: allowed json", o.format)}
	case o.backend != "cpu":
		return &exitError{2, fmt.Errorf("generate: --backend %q: allowed cpu (the CUDA backend does not read checkpoints or prompt ids yet)", o.backend)}
	case o.dtype != "fp32":
		return &exitError{2, fmt.Errorf("generate: --dtype %q: allowed fp32 (the CPU backend computes in float32)", o.dtype)}
	}
	data, err := os.ReadFile(o.idsFile)
	if err != nil {
		return &exitError{2, fmt.Errorf("generate: --ids-file: %w", err)}
	}
	var prompts [][]int
	if err := json.Unmarshal(data, &prompts); err != nil {
		return &exitError{2, fmt.Errorf("generate: --ids-file %s: want a JSON list of token-id lists: %w", o.idsFile, err)}
	}
	if len(prompts) == 0 {
		return &exitError{2, fmt.Errorf("generate: --ids-file %s holds no prompts", o.idsFile)}
	}
	dir, err := filepath.Abs(o.modelDir)
	if err != nil {
		return &exitError{2, err}
	}
	cfg, err := configs.GenerateConfig(dir, len(prompts), len(prompts[0])+o.newTokens, o.newTokens, o.tp, o.pp, o.microbatches)
	if err != nil {
		return &exitError{2, fmt.Errorf("generate: %w", err)}
	}
	hf, err := checkpoint.ReadConfig(dir)
	if err != nil {
		return &exitError{2, err}
	}
	w, err := checkpoint.OpenWeights(dir)
	if err != nil {
		return &exitError{2, err}
	}
	defer w.Close()
	opts := pexec.GenerateOptions{
		NewTokens: o.newTokens, Stepwise: o.logitsOut != "", NewComms: localcomm.Comms,
		NewCompute: cpu.FromCheckpoint(w, hf),
	}
	res, err := pexec.Generate(cmd.Context(), cfg, prompts, opts)
	if err != nil {
		return err
	}
	if o.logitsOut != "" {
		if err := report.WriteFileAtomic(o.logitsOut, func(w io.Writer) error { return json.NewEncoder(w).Encode(res.Logits) }); err != nil {
			return fmt.Errorf("generate: --logits-out: %w", err)
		}
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema string `json:"schema"`
		pexec.GenerateResult
	}{"partbench.generate/v1", res})
}
