package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/compare"
)

func newPlotCmd() *cobra.Command {
	o := &PlotArgs{}
	cmd := &cobra.Command{
		Use:   "plot [FILE] --output FIG.svg|FIG.png [--kind breakdown|sweep|collectives|scatter]",
		Short: "Draw a saved result (model, sweep, search, compare, comparison, run, emulation or remote JSON) or the collective model as SVG or PNG",
		Long: `Draw a figure from a saved JSON result, choosing the plot by its "schema":

  partbench.model/v1    breakdown: each strategy's critical-rank time by bound, prefill and decode
  partbench.sweep/v1    sweep: TPOT and TPS against the swept key, one line per strategy
  partbench.compare/v1  scatter: measured against modeled with y = x and a ±tolerance band
  partbench.run/v1      scatter of the run's measured vs modeled rows
  partbench.search/v1   scatter of the closed-form estimate against the full timeline
  partbench.remote/v1   remote: payload bytes and latency per request of each mode (partbench remote's
                        results.json), with the naive/stateful gap
  partbench.comparison/v1  scatter of each later file's values against the first's (compare --format json),
                        one panel per unit, one series per later file
  partbench.emulate/v1  scatter of emulated against modeled (run --emulate-ranks' results.json): TTFT, TPOT,
                        TPS, bubbles, memory

--kind collectives needs no FILE: modeled bus bandwidth of all_reduce and all_gather over
the first --ranks GPUs of --topology, beside published nccl-tests points (docs/collectives.md).
The format follows the --output extension (.svg or .png).

  partbench model --dry-run --format json --output est.json && partbench plot est.json --output breakdown.svg
  partbench plot --kind collectives --topology dgx-h100x2 --ranks 8 --output busbw.png`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Write(args, loadSystem, collectiveOptionsFromEnv())
		},
	}
	f := cmd.Flags()
	cliflag.Output(f, &o.Out, "output image: a path ending in .svg or .png (required)", "out")
	f.StringVar(&o.Kind, "kind", "", "breakdown, sweep, collectives, scatter or remote (default: from the file's schema)")
	f.StringVar(&o.Topology, "topology", "dgx-h100x2", "collectives: topology preset")
	cliflag.Alias(f, "preset", "topology", true)
	f.StringVar(&o.Hardware, "hardware", "h100-sxm", "collectives: hardware (GPU) preset")
	f.IntVar(&o.Ranks, "ranks", 8, "collectives: group size (ranks 0..N−1)")
	cliflag.FiniteFloat(f, &o.Tolerance, "tolerance", 0, "scatter: relative band around y = x (default: the file's tolerance, else "+strconv.FormatFloat(compare.DefaultTolerance, 'g', -1, 64)+")")
	cliflag.DefaultInUsage(f, "tolerance")
	return cmd
}
