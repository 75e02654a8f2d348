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
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/launchflags"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

type generateOptions struct {
	modelDir, idsFile, logitsOut, format, backend, dtype string
	reference, rendezvous, hostWindow, bindTo            string
	newTokens, tp, pp, microbatches                      int
	nproc                                                int
	joinTimeout                                          time.Duration
}

func newGenerateCmd() *cobra.Command {
	o := &generateOptions{}
	cmd := &cobra.Command{
		Use:   "generate --model-dir DIR --ids-file prompts.json",
		Short: "Greedy decoding of a Hugging Face checkpoint under a partitioning (CPU or GPU backend)",
		Long: `generate reads a model directory in the Hugging Face layout (config.json and
safetensors), runs the prompts of --ids-file (a JSON list of token-id lists of
one length) under TP × PP ranks, each rank reading only its own slices, and
prints {"greedy_ids": [[…], …]}. --logits-out writes the logits at every prompt
position as [sequence][position][vocab].

--backend cpu computes in float32 (in-process ranks, or one process per rank
with --nproc or under a launcher). --backend cuda runs every rank on this
process's GPU (ranks staged through the host) in --dtype fp32, fp16 or bf16;
under a launcher each rank takes its local GPU and NCCL.

--reference FILE (transformers' reference.json: prompt_ids, logits at every
prompt position, greedy_ids) also runs its prompts, each followed by its greedy
ids, one position per pass, and compares: every logit within the backend's
tolerance of docs/numerics.md and each greedy id equal unless the run's own
logits of the two ids are within twice that tolerance. The comparison is
printed under "reference"; the exit status is 1 when it fails. Without
--ids-file the reference's prompts are generated.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGenerate(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.modelDir, "model-dir", "", "Hugging Face model directory (config.json + model.safetensors or sharded)")
	f.StringVar(&o.idsFile, "ids-file", "", "JSON list of token-id lists, one per sequence (default with --reference: its prompt_ids)")
	f.IntVar(&o.newTokens, "new-tokens", 16, "tokens to generate per sequence")
	f.IntVar(&o.tp, "tp", 1, "tensor-parallel ranks")
	f.IntVar(&o.pp, "pp", 1, "pipeline stages")
	f.IntVar(&o.microbatches, "microbatches", 1, "pipeline micro-batches (must divide the number of prompts)")
	f.StringVar(&o.logitsOut, "logits-out", "", "write the logits at every prompt position to this JSON file")
	cliflag.MarkOutputFile(f, "logits-out")
	f.StringVar(&o.reference, "reference", "", "compare with an independent implementation's outputs (transformers' reference.json); in one process only")
	cliflag.Format(f, &o.format, cliflag.JSON)
	f.StringVar(&o.backend, "backend", "cpu", "compute backend: cpu or cuda")
	f.StringVar(&o.dtype, "dtype", "fp32", "element type: fp32 (cpu); fp32, fp16 or bf16 (cuda)")
	f.StringVar(&o.hostWindow, "host-window", "", "with --backend cuda: float32 bytes of checkpoint tensors read ahead of their upload, e.g. 256M (default 1G; the host holds at most two windows)")
	f.IntVar(&o.nproc, "nproc-per-node", 0, "start this many local ranks, one process each (the built-in launcher; tp × pp of them); under mpirun or srun every process is a rank already")
	cliflag.Alias(f, "nproc", "nproc-per-node", false)
	f.StringVar(&o.rendezvous, "rdzv-endpoint", "", "under a launcher: rank 0's control address host:port, as torchrun's (default: MASTER_ADDR:MASTER_PORT, else "+launch.DefaultRendezvousAddr+")")
	cliflag.Alias(f, "rendezvous", "rdzv-endpoint", false)
	f.DurationVar(&o.joinTimeout, "join-timeout", rendezvous.DefaultJoinTimeout, "with --nproc or a launcher: how long ranks wait for each other at the start")
	f.StringVar(&o.bindTo, "bind-to", "auto", "with --nproc or a launcher: bind each local rank's threads to its own block of the host's CPUs: auto (CPU-backend ranks, when they do not outnumber the CPUs), core (every backend's, likewise) or none (as run's and mpirun's --bind-to)")
	return cmd
}

func runGenerate(cmd *cobra.Command, o *generateOptions) error {
	if err := launchflags.Check(cmd.Flags()); err != nil {
		return &exitError{2, fmt.Errorf("generate: %w", err)}
	}
	switch {
	case o.modelDir == "":
		return &exitError{2, errors.New("generate: --model-dir is required")}
	case o.idsFile == "" && o.reference == "":
		return &exitError{2, errors.New("generate: --ids-file (or --reference, whose prompts are generated) is required")}
	case o.newTokens < 1:
		return &exitError{2, fmt.Errorf("generate: --new-tokens %d: must be ≥ 1 (1 is the prefill's token alone)", o.newTokens)}
	case o.format != "json":
		return &exitError{2, fmt.Errorf("generate: --format %q: allowed json", o.format)}
	case o.backend != configs.BackendCPU && o.backend != configs.BackendCUDA:
		return &exitError{2, fmt.Errorf("generate: --backend %q: must be cpu or cuda", o.backend)}
	}
	launched := cliflag.Changed(cmd.Flags(), "nproc", "nproc-per-node")
	env, err := launch.Detect(os.LookupEnv)
	if err != nil {
		return err
	}
	if o.reference != "" && (launched || env.Source != launch.SourceSingle) {
		return &exitError{2, errors.New("generate: --reference runs every rank in this process: not with --nproc or under a launcher")}
	}
	bind, err := launch.ParseBind(o.bindTo)
	if err != nil {
		return &exitError{2, fmt.Errorf("generate: %w", err)}
	}
	// A process is one rank with --nproc (its children) or under a
	// launcher; otherwise every rank runs in this process, none to bind.
	if cmd.Flags().Changed("bind-to") && !launched && env.Source == launch.SourceSingle && o.tp*o.pp > 1 {
		return &exitError{2, fmt.Errorf("generate: --bind-to %s: without --nproc or a launcher the %d ranks run in this process, with no rank to bind", o.bindTo, o.tp*o.pp)}
	}
	var ref *pexec.Reference
	if o.reference != "" {
		if ref, err = hf.ReadReference(o.reference); err != nil {
			return &exitError{2, fmt.Errorf("generate: --reference: %w", err)}
		}
	}
	// The backend's part of the workflow, refused before anything is read:
	// --dtype it cannot compute in, a missing driver or library.
	reg := backend.Default()
	b, err := reg.ForRun(o.backend)
	if err != nil {
		return &exitError{2, fmt.Errorf("generate: %w", err)}
	}
	if b.Checkpoint == nil {
		return &exitError{2, fmt.Errorf("generate: --backend %s reads no checkpoints", o.backend)}
	}
	co, err := checkpointOptions(o.dtype, o.hostWindow)
	if err != nil {
		return &exitError{2, fmt.Errorf("generate: %w", err)}
	}
	hb, err := b.Checkpoint(co, env)
	if err != nil {
		return &exitError{2, fmt.Errorf("generate --backend %s: %w", o.backend, err)}
	}
	var prompts [][]int
	if o.idsFile != "" {
		if prompts, err = checkpoint.ReadPromptIDs(o.idsFile); err != nil {
			return &exitError{2, fmt.Errorf("generate: %w", err)}
		}
	} else {
		prompts = ref.PromptIDs
	}
	dir, err := filepath.Abs(o.modelDir)
	if err != nil {
		return &exitError{2, err}
	}
	g := hf.Generation{Dir: dir, Prompts: prompts, NewTokens: o.newTokens, TP: o.tp, PP: o.pp, Microbatches: o.microbatches,
		Stepwise: o.logitsOut != "", JoinTimeout: o.joinTimeout, Env: env}
	cfg, err := g.Config() // once here, not in every rank
	if err != nil {
		return &exitError{2, err}
	}
	if launched {
		return o.launch(cmd.Context(), cmd.Flags(), dir, o.tp*o.pp)
	}
	if o.rendezvous != "" {
		if _, _, err := launch.ParseRendezvous(o.rendezvous, o.tp*o.pp); err != nil {
			return &exitError{2, fmt.Errorf("generate: %w", err)}
		}
		g.Env.RendezvousAddr = o.rendezvous
	}
	var bindNote string
	if env.Source != launch.SourceSingle {
		if bindNote, err = launch.BindRank(bind, env, o.backend == configs.BackendCPU, o.tp); err != nil {
			return &exitError{2, fmt.Errorf("generate: %w", err)}
		}
	}
	m, err := hf.OpenFor(cfg, dir)
	if err != nil {
		return err
	}
	defer m.Close()
	res, err := m.Generate(cmd.Context(), cfg, g, hb)
	if err != nil || res == nil {
		return err
	}
	if bindNote != "" {
		res.Notes = append(res.Notes, bindNote)
	}
	if fs := m.ShardedFiles(); len(fs) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("weights read from %d pre-sharded file(s) written by partbench shard, the first %s", len(fs), fs[0]))
	}
	if o.logitsOut != "" {
		if err := report.WriteFileAtomic(o.logitsOut, func(w io.Writer) error { return json.NewEncoder(w).Encode(res.Logits) }); err != nil {
			return fmt.Errorf("generate: --logits-out: %w", err)
		}
	}
	var verdict error
	if ref != nil {
		rc, err := m.CompareReference(cmd.Context(), g, hb, o.reference, ref, hb.ReferenceTolerance)
		if err != nil {
			return fmt.Errorf("generate: --reference: %w", err)
		}
		res.Reference = &rc
		if err := rc.Err(); err != nil {
			verdict = &exitError{1, fmt.Errorf("generate --backend %s --dtype %s: %w", hb.Name, hb.DType, err)}
		}
	}
	if err := report.GenerateJSON(cmd.OutOrStdout(), *res); err != nil {
		return err
	}
	return verdict
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
		launchflags.Forward(flags, "model-dir", "ids-file", "logits-out", "reference", "nproc", "nproc-per-node", "rendezvous", "rdzv-endpoint")...)
	if o.logitsOut != "" {
		out, err := filepath.Abs(o.logitsOut)
		if err != nil {
			return err
		}
		argv = append(argv, "--logits-out", out)
	}
	return spawnRanks(ctx, launch.SpawnOptions{NProc: n, Argv: argv}, "generate: ")
}

// checkpointOptions are the backend options of a checkpoint workflow from
// --dtype and --host-window ("": the backend's default window).
func checkpointOptions(dtype, hostWindow string) (backend.CheckpointOptions, error) {
	o := backend.CheckpointOptions{DType: dtype}
	if hostWindow == "" {
		return o, nil
	}
	n, err := sim.ParseBytes("--host-window", hostWindow)
	if err != nil {
		return o, err
	}
	if n == 0 {
		return o, fmt.Errorf("--host-window %q: must be positive (a window smaller than a tensor holds that tensor alone)", hostWindow)
	}
	o.HostWindowBytes = n
	return o, nil
}
