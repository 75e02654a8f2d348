package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/progress"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

type searchOptions struct {
	model       string
	gpus        int
	hardware    string
	topology    string
	nodes       int
	objective   string
	maxTPOTms   float64
	maxTTFTs    float64
	top         int
	full        int
	decodeSteps int
	maxMicro    int
	format      string
	out         string
}

func newSearchCmd() *cobra.Command {
	o := &searchOptions{}
	cmd := &cobra.Command{
		Use:   "search --config CONFIG [--gpus N] [--objective tps|tpot|ttft] [--max-tpot-ms X] [--max-ttft-s Y]",
		Short: "Search every TP×PP, micro-batch count and layer map for the best partitioning",
		Long: `Enumerate every partitioning of the config's model and workload over N GPUs:
each tp × pp = N where tp divides heads, kv_heads and ffn and pp ≤ layers; every
micro-batch count 1…64 that divides the batch; the even layer map and, when the
layers do not divide evenly or the model has an embedding or LM head, the maps
with the first and/or last stage one layer lighter. Candidates that do not fit in
memory are pruned; the rest are estimated with the closed-form pipeline law
(sim.Quick) and ranked by the objective under the constraints. The top ones are
re-run through the full discrete-event timeline and both numbers are printed.

The system is the config's hardware and topology unless --hardware/--topology
name presets; --nodes scales the topology to that many nodes of its kind. N is
the topology's GPU count unless --gpus says otherwise (then they must agree).

  partbench search --config tp8pp2
  partbench search --config configs/tp8pp2.toml --gpus 64 --nodes 8 --objective tpot --max-ttft-s 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "config", "", "strategy config whose model and workload are searched: a TOML file or an embedded preset name")
	cliflag.Alias(f, "model", "config", true)
	f.IntVar(&o.gpus, "gpus", 0, "number of GPUs (default: the topology's GPU count; else must equal it)")
	f.StringVar(&o.hardware, "hardware", "", "GPU preset (default: the config's hardware)")
	f.StringVar(&o.topology, "topology", "", "topology preset (default: the config's topology)")
	f.IntVar(&o.nodes, "nodes", 0, "scale the topology to this many nodes of the same kind")
	f.StringVar(&o.objective, "objective", sim.ObjectiveTPS, "rank by: tps (highest), tpot (lowest) or ttft (lowest)")
	f.Float64Var(&o.maxTPOTms, "max-tpot-ms", 0, "constraint: TPOT at most this many milliseconds (0: none)")
	f.Float64Var(&o.maxTTFTs, "max-ttft-s", 0, "constraint: TTFT at most this many seconds (0: none)")
	f.IntVar(&o.top, "top", 10, "rows to print")
	f.IntVar(&o.full, "full", -1, "top candidates to re-run through the full timeline (default: --top; 0: none)")
	f.IntVar(&o.decodeSteps, "decode-steps", defaultDecodeSteps, "decode steps the full timeline re-run starts with (≥ 3; doubled up to 4× where it disagrees with the closed form)")
	f.IntVar(&o.maxMicro, "max-microbatches", sim.DefaultMaxMicrobatches, "largest micro-batch count tried")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	cliflag.Output(f, &o.out, "write the table or document to this file instead of standard output", "o", "out")
	cliflag.DefaultInUsage(f, "gpus", "full")
	return cmd
}

func (o *searchOptions) check() error {
	switch {
	case o.model == "":
		return fmt.Errorf("--config: required: a config file or embedded preset whose model and workload are searched (see 'partbench presets')")
	case o.gpus < 0:
		return fmt.Errorf("--gpus: must be a positive number of GPUs (got %d)", o.gpus)
	case o.nodes < 0:
		return fmt.Errorf("--nodes: must be ≥ 1 (got %d)", o.nodes)
	case o.top < 1:
		return fmt.Errorf("--top: must be ≥ 1 (got %d)", o.top)
	case o.full < -1:
		return fmt.Errorf("--full: must be ≥ 0 (got %d)", o.full)
	case o.decodeSteps < 3:
		return fmt.Errorf("--decode-steps: must be ≥ 3 (got %d)", o.decodeSteps)
	case o.maxMicro < 1:
		return fmt.Errorf("--max-microbatches: must be ≥ 1 (got %d)", o.maxMicro)
	case o.maxTPOTms < 0:
		return fmt.Errorf("--max-tpot-ms: must be ≥ 0 (got %g)", o.maxTPOTms)
	case o.maxTTFTs < 0:
		return fmt.Errorf("--max-ttft-s: must be ≥ 0 (got %g)", o.maxTTFTs)
	}
	for _, ob := range sim.Objectives {
		if o.objective == ob {
			return nil
		}
	}
	return fmt.Errorf("--objective: must be one of %s (got %q)", strings.Join(sim.Objectives, ", "), o.objective)
}

func (o *searchOptions) run(stdout io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	cfg, err := configs.Load(o.model)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	sys, err := configs.SystemOverride{Hardware: o.hardware, Topology: o.topology, Nodes: o.nodes, GPUs: o.gpus}.Resolve(cfg)
	if err != nil {
		return err
	}
	spec := sim.SearchSpec{Config: cfg, System: sys, Objective: o.objective, MaxTPOTS: o.maxTPOTms / 1e3, MaxTTFTS: o.maxTTFTs,
		MaxMicrobatches: o.maxMicro, Collectives: collectiveOptionsFromEnv(), Progress: progress.Bar("search")}
	res, err := sim.Search(spec)
	if err != nil {
		return err
	}
	full := o.full
	if full < 0 {
		full = o.top
	}
	if full > 0 {
		opts := sim.Options{DecodeSteps: o.decodeSteps, Collectives: spec.Collectives}
		if err := res.Refine(spec, full, opts, progress.Bar("full timeline")); err != nil {
			return err
		}
	}
	if res.Enumerated == 0 {
		return res.Empty()
	}
	if err := report.ToOutput(o.out, stdout, func(w io.Writer) error {
		return report.Search(w, o.format, version, cfg, res, o.top, o.decodeSteps)
	}); err != nil {
		return err
	}
	return res.Empty() // the table shows why; the exit status says there is no answer
}
