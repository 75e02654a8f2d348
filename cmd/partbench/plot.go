package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/compare"

	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/topology"
)

type plotOptions struct {
	out       string
	kind      string
	preset    string
	hardware  string
	ranks     int
	tolerance float64
	// resolve turns a hardware and a topology preset into a System.
	resolve func(hardwarePreset, topologyPreset string) (topology.System, error)
}

func newPlotCmd() *cobra.Command {
	o := &plotOptions{resolve: loadSystem}
	cmd := &cobra.Command{
		Use:   "plot [FILE] --output FIG.svg|FIG.png [--kind breakdown|sweep|collectives|scatter]",
		Short: "Draw a saved result (model, sweep, search, compare or run JSON) or the collective model as SVG or PNG",
		Long: `Draw a figure from a saved JSON result, choosing the plot by its "schema":

  partbench.model/v1    breakdown: each strategy's critical-rank time by bound, prefill and decode
  partbench.sweep/v1    sweep: TPOT and TPS against the swept key, one line per strategy
  partbench.compare/v1  scatter: measured against modeled with y = x and a ±tolerance band
  partbench.run/v1      scatter of the run's measured vs modeled rows
  partbench.search/v1   scatter of the closed-form estimate against the full timeline
  partbench.remote.v1   remote: payload bytes and latency per request of each mode (partbench remote's
                        results.json), with the naive/stateful gap

--kind collectives needs no FILE: modeled bus bandwidth of all_reduce and all_gather over
the first --ranks GPUs of --topology, beside published nccl-tests points (docs/collectives.md).
The format follows the --output extension (.svg or .png).

  partbench model --dry-run --format json --output est.json && partbench plot est.json --output breakdown.svg
  partbench plot --kind collectives --topology dgx-h100x2 --ranks 8 --output busbw.png`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(args) },
	}
	f := cmd.Flags()
	cliflag.Output(f, &o.out, "output image: a path ending in .svg or .png (required)", "out")
	f.StringVar(&o.kind, "kind", "", "breakdown, sweep, collectives, scatter or remote (default: from the file's schema)")
	f.StringVar(&o.preset, "topology", "dgx-h100x2", "collectives: topology preset")
	cliflag.Alias(f, "preset", "topology", true)
	f.StringVar(&o.hardware, "hardware", "h100-sxm", "collectives: hardware (GPU) preset")
	f.IntVar(&o.ranks, "ranks", 8, "collectives: group size (ranks 0..N−1)")
	f.Float64Var(&o.tolerance, "tolerance", 0, "scatter: relative band around y = x (default: the file's tolerance, else "+strconv.FormatFloat(compare.DefaultTolerance, 'g', -1, 64)+")")
	cliflag.DefaultInUsage(f, "tolerance")
	return cmd
}

func (o *plotOptions) run(args []string) error {
	if o.out == "" {
		return fmt.Errorf("--output: required: a path ending in .svg or .png")
	}
	format, err := report.PlotFormat(o.out)
	if err != nil {
		return err
	}
	if o.kind != "" && !contains(report.PlotKinds, o.kind) {
		return fmt.Errorf("--kind: must be one of %s (got %q)", strings.Join(report.PlotKinds, ", "), o.kind)
	}
	if o.tolerance < 0 || o.tolerance >= 1 {
		return fmt.Errorf("--tolerance: must be in [0, 1) (got %g)", o.tolerance)
	}
	var fig *report.Figure
	if o.kind == report.PlotCollectives {
		if len(args) > 0 {
			return fmt.Errorf("plot --kind collectives: takes no FILE (got %q); it models --topology", args[0])
		}
		if fig, err = o.collectives(); err != nil {
			return err
		}
	} else {
		if len(args) == 0 {
			return fmt.Errorf("plot: FILE required for --kind %s (a saved JSON result); only --kind collectives needs none", orDefault(o.kind, "from the schema"))
		}
		if fig, err = o.fromFile(args[0]); err != nil {
			return err
		}
	}
	return report.WriteFileAtomic(o.out, func(w io.Writer) error { return fig.Write(w, format) })
}

func (o *plotOptions) fromFile(path string) (*report.Figure, error) {
	if fig, ok, err := report.ResumeFigureFile(path); ok || err != nil {
		return fig, err // partbench.resume/v1: the crossover figure
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := report.ReadDoc(f, path)
	if err != nil {
		return nil, err
	}
	return report.DocFigure(d, path, o.kind, o.tolerance)
}

// collectives models bus bandwidth for sizes 8 B … 8 GiB with sim.Collective.
func (o *plotOptions) collectives() (*report.Figure, error) {
	if o.resolve == nil {
		return nil, fmt.Errorf("plot: no system resolver configured")
	}
	sys, err := o.resolve(o.hardware, o.preset)
	if err != nil {
		return nil, fmt.Errorf("--topology/--hardware: %w", err)
	}
	if o.ranks < 2 || o.ranks > sys.Topology.Size() {
		return nil, fmt.Errorf("--ranks: must be in [2, %d] for topology %q (got %d)", sys.Topology.Size(), sys.Topology.Name, o.ranks)
	}
	return report.CollectivesFigure(sys, o.ranks, collectiveOptionsFromEnv())
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
