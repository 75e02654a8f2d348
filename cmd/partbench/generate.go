package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/launchflags"
	"github.com/partbench/partbench/report"
)

type generateOptions struct {
	modelDir, idsFile, logitsOut, format, backend, dtype string
	rendezvous                                           string
	newTokens, tp, pp, microbatches                      int
	nproc                                                int
	joinTimeout                                          time.Duration
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
	cliflag.MarkOutputFile(f, "logits-out")
	cliflag.Format(f, &o.format, cliflag.JSON)
	f.StringVar(&o.backend, "backend", "cpu", "compute backend: cpu (cuda: refused, naming what is missing)")
	f.StringVar(&o.dtype, "dtype", "fp32", "element type: fp32")
	f.IntVar(&o.nproc, "nproc-per-node", 0, "start this many local ranks, one process each (the built-in launcher; tp × pp of them); under mpirun or srun every process is a rank already")
	cliflag.Alias(f, "nproc", "nproc-per-node", false)
	f.StringVar(&o.rendezvous, "rdzv-endpoint", "", "under a launcher: rank 0's control address host:port, as torchrun's (default: MASTER_ADDR:MASTER_PORT, else "+launch.DefaultRendezvousAddr+")")
	cliflag.Alias(f, "rendezvous", "rdzv-endpoint", false)
	f.DurationVar(&o.joinTimeout, "join-timeout", rendezvous.DefaultJoinTimeout, "with --nproc or a launcher: how long ranks wait for each other at the start")
	return cmd
}

func runGenerate(cmd *cobra.Command, o *generateOptions) error {
	if err := launchflags.Check(cmd.Flags()); err != nil {
		return &exitError{2, fmt.Errorf("generate: %w", err)}
	}
	switch {
	case o.modelDir == "":
		return &exitError{2, errors.New("generate: --model-dir is required")}
	case o.idsFile == "":
		return &exitError{2, errors.New("generate: --ids-file is required")}
	case o.format != "json":
		return &exitError{2, fmt.Errorf("generate: --format %q: allowed json", o.format)}
	case o.backend == configs.BackendCUDA:
		return &exitError{2, gpuDriverRefusal(backend.Default(), "generate", generateCUDAMissing)}
	case o.backend != "cpu":
		return &exitError{2, fmt.Errorf("generate: --backend %q: must be cpu or cuda", o.backend)}
	case o.dtype != "fp32":
		return &exitError{2, fmt.Errorf("generate: --dtype %q: allowed fp32 (the CPU backend computes in float32)", o.dtype)}
	}
	prompts, err := checkpoint.ReadPromptIDs(o.idsFile)
	if err != nil {
		return &exitError{2, fmt.Errorf("generate: %w", err)}
	}
	dir, err := filepath.Abs(o.modelDir)
	if err != nil {
		return &exitError{2, err}
	}
	g := cpu.GenerateDir{Dir: dir, Prompts: prompts, NewTokens: o.newTokens, TP: o.tp, PP: o.pp, Microbatches: o.microbatches,
		Stepwise: o.logitsOut != "", JoinTimeout: o.joinTimeout, NewComm: backend.TCPComm}
	if cliflag.Changed(cmd.Flags(), "nproc", "nproc-per-node") {
		if _, _, err := g.Config(); err != nil { // once here, not in every rank
			return &exitError{2, err}
		}
		return o.launch(cmd.Context(), cmd.Flags(), dir, o.tp*o.pp)
	}
	if g.Env, err = launch.Detect(os.LookupEnv); err != nil {
		return err
	}
	if o.rendezvous != "" {
		if _, _, err := launch.ParseRendezvous(o.rendezvous, o.tp*o.pp); err != nil {
			return &exitError{2, fmt.Errorf("generate: %w", err)}
		}
		g.Env.RendezvousAddr = o.rendezvous
	}
	res, err := cpu.Generate(cmd.Context(), g)
	if err != nil || res == nil {
		return err
	}
	if o.logitsOut != "" {
		if err := report.WriteFileAtomic(o.logitsOut, func(w io.Writer) error { return json.NewEncoder(w).Encode(res.Logits) }); err != nil {
			return fmt.Errorf("generate: --logits-out: %w", err)
		}
	}
	return report.GenerateJSON(cmd.OutOrStdout(), *res)
}

// launch starts n local ranks of this generation (the built-in launcher),
// each a `partbench generate` without --nproc, and waits for all.
func (o *generateOptions) launch(ctx context.Context, flags *pflag.FlagSet, dir string, n int) error {
	if o.nproc != n {
		return &exitError{2, fmt.Errorf("generate: --nproc %d: --tp %d × --pp %d needs %d ranks", o.nproc, o.tp, o.pp, n)}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ids, err := filepath.Abs(o.idsFile)
	if err != nil {
		return err
	}
	// The ranks share this one's flags, with its paths made absolute.
	argv := append([]string{exe, "generate", "--model-dir", dir, "--ids-file", ids},
		launchflags.Forward(flags, "model-dir", "ids-file", "logits-out", "nproc", "nproc-per-node", "rendezvous", "rdzv-endpoint")...)
	if o.logitsOut != "" {
		out, err := filepath.Abs(o.logitsOut)
		if err != nil {
			return err
		}
		argv = append(argv, "--logits-out", out)
	}
	return spawnRanks(ctx, launch.SpawnOptions{NProc: n, Argv: argv}, "generate: ")
}
