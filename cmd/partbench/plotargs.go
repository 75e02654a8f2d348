package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// PlotArgs are `partbench plot`'s flags.
type PlotArgs struct {
	Out      string // --output: a path ending in .svg or .png
	Kind     string // --kind: one of PlotKinds, or "" for the file's schema
	Topology string // --topology: collectives
	Hardware string // --hardware: collectives
	Ranks    int    // --ranks: collectives' group size
	// Tolerance is the scatter's band around y = x (0: the file's).
	Tolerance float64
}

// Write draws the figure args (at most one saved JSON result) and a ask
// for and writes it to a.Out; --kind collectives models the collectives
// on the system resolve gives, with opts.
func (o *PlotArgs) Write(args []string, resolve func(hardware, topology string) (topology.System, error), opts sim.CollectiveOptions) error {
	if o.Out == "" {
		return fmt.Errorf("--output: required: a path ending in .svg or .png")
	}
	format, err := report.PlotFormat(o.Out)
	if err != nil {
		return err
	}
	if o.Kind != "" && !slices.Contains(report.PlotKinds, o.Kind) {
		return fmt.Errorf("--kind: must be one of %s (got %q)", strings.Join(report.PlotKinds, ", "), o.Kind)
	}
	if o.Tolerance < 0 || o.Tolerance >= 1 {
		return fmt.Errorf("--tolerance: must be in [0, 1) (got %g)", o.Tolerance)
	}
	var fig *report.Figure
	if o.Kind == report.PlotCollectives {
		if len(args) > 0 {
			return fmt.Errorf("plot --kind collectives: takes no FILE (got %q); it models --topology", args[0])
		}
		if fig, err = o.collectives(resolve, opts); err != nil {
			return err
		}
	} else {
		if len(args) == 0 {
			return fmt.Errorf("plot: FILE required for --kind %s (a saved JSON result); only --kind collectives needs none", cmp.Or(o.Kind, "from the schema"))
		}
		if fig, err = o.fromFile(args[0]); err != nil {
			return err
		}
	}
	return report.WriteFileAtomic(o.Out, func(w io.Writer) error { return fig.Write(w, format) })
}

func (o *PlotArgs) fromFile(path string) (*report.Figure, error) {
	if fig, ok, err := report.ResumeFigureFile(path); ok || err != nil {
		return fig, err // partbench.resume/v1: the crossover figure
	}
	d, err := report.ReadDocFile(path)
	if err != nil {
		return nil, err
	}
	return report.DocFigure(d, path, o.Kind, o.Tolerance)
}

// collectives models bus bandwidth of all_reduce and all_gather over ranks
// 0..o.Ranks−1 with sim.Collective for sizes 8 B … 8 GiB (doubling), and has
// report draw it beside the published nccl-tests points.
func (o *PlotArgs) collectives(resolve func(hardware, topology string) (topology.System, error), opts sim.CollectiveOptions) (*report.Figure, error) {
	sys, err := resolve(o.Hardware, o.Topology)
	if err != nil {
		return nil, fmt.Errorf("--topology/--hardware: %w", err)
	}
	if o.Ranks < 2 || o.Ranks > sys.Topology.Size() {
		return nil, fmt.Errorf("--ranks: must be in [2, %d] for topology %q (got %d)", sys.Topology.Size(), sys.Topology.Name, o.Ranks)
	}
	group := make([]int, o.Ranks)
	for i := range group {
		group[i] = i
	}
	var series []report.CollectiveSeries
	for _, op := range []commcount.Op{commcount.AllReduce, commcount.AllGather} {
		s := report.CollectiveSeries{Label: fmt.Sprintf("modeled %s, %d GPUs", op, o.Ranks)}
		for b := int64(8); b <= 8<<30; b *= 2 {
			e, err := sim.Collective(sys, op, group, b, opts)
			if err != nil {
				return nil, err
			}
			s.Points = append(s.Points, report.CollectivePoint{Op: string(op), Ranks: o.Ranks, Bytes: b, BusBWGBps: e.BusBWBytesPerS / 1e9})
		}
		series = append(series, s)
	}
	return report.CollectivesFigure(sys, o.Ranks, series)
}
