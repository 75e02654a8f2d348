package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/progress"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

type searchOptions struct {
	sim.SearchRequest
	format string
	out    string
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

What it costs: the closed-form pass takes well under a millisecond per
candidate. The re-run of the top --full candidates (default: --top, 10) is
one discrete-event timeline per candidate, run again with twice the decode
steps (up to 4×) where it disagrees with the closed form: about as long as a
model --dry-run of that plan, tens of milliseconds at 16 GPUs, seconds to
minutes per candidate at thousands of GPUs. --full 0 skips it. Progress is
printed on stderr (a bar on a terminal, a line every 5 s elsewhere) and the
closing note gives each phase's time.

  partbench search --config tp8pp2
  partbench search --config configs/tp8pp2.toml --gpus 64 --nodes 8 --objective tpot --max-ttft-s 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", "", "strategy config whose model and workload are searched: a TOML file or an embedded preset name")
	cliflag.Alias(f, "model", "config", true)
	f.IntVar(&o.GPUs, "gpus", 0, "number of GPUs (default: the topology's GPU count; else must equal it)")
	f.StringVar(&o.Hardware, "hardware", "", "GPU preset (default: the config's hardware)")
	f.StringVar(&o.Topology, "topology", "", "topology preset (default: the config's topology)")
	f.IntVar(&o.Nodes, "nodes", 0, "scale the topology to this many nodes of the same kind")
	f.StringVar(&o.Objective, "objective", sim.ObjectiveTPS, "rank by: tps (highest), tpot (lowest), ttft (lowest), or "+servingObjective+" (highest sustainable requests/s per GPU under --max-ttft-s/--max-tpot-ms: 'partbench serving --search-placements')")
	cliflag.FiniteFloat(f, &o.MaxTPOTms, "max-tpot-ms", 0, "constraint: TPOT at most this many milliseconds (0: none)")
	cliflag.FiniteFloat(f, &o.MaxTTFTs, "max-ttft-s", 0, "constraint: TTFT at most this many seconds (0: none)")
	f.IntVar(&o.Top, "top", 10, "rows to print")
	f.IntVar(&o.Full, "full", -1, "top candidates to re-run through the full timeline (default: --top; 0: none)")
	f.IntVar(&o.DecodeSteps, "decode-steps", defaultDecodeSteps, "decode steps the full timeline re-run starts with (≥ 3; doubled up to 4× where it disagrees with the closed form)")
	f.IntVar(&o.MaxMicrobatches, "max-microbatches", sim.DefaultMaxMicrobatches, "largest micro-batch count tried")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	cliflag.Output(f, &o.out, "write the table or document to this file instead of standard output", "o", "out")
	addWorkloadFlags(f, &o.Workload)
	addRuntimeFlag(f, &o.Runtime)
	cliflag.DefaultInUsage(f, "gpus", "full", "batch-size", "input-len", "output-len")
	return cmd
}

func (o *searchOptions) run(stdout io.Writer) error {
	if o.Objective == servingObjective {
		return o.runServingObjective(stdout)
	}
	o.Collectives = collectiveOptionsFromEnv()
	o.Progress = func(phase string) func(done, total int) { return progress.Lines(phase) }
	cfg, res, err := sim.RunSearch(o.SearchRequest)
	if err != nil {
		return err
	}
	if err := report.ToOutput(o.out, stdout, func(w io.Writer) error {
		return report.Search(w, o.format, version, cfg, res, o.Top, o.DecodeSteps)
	}); err != nil {
		return err
	}
	return res.Empty() // the table shows why; the exit status says there is no answer
}
