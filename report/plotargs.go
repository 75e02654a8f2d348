package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/partbench/partbench/fileio"
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

// readDocFile reads the saved result at path.
func readDocFile(path string) (*Doc, error) {
	data, err := fileio.ReadSmall(path, "results file", MaxDocBytes)
	if err != nil {
		return nil, err
	}
	return ReadDoc(bytes.NewReader(data), path)
}

// Write draws the figure args (at most one saved JSON result) and a ask
// for and writes it to a.Out; --kind collectives models the collectives
// on the system resolve gives, with opts.
func (o *PlotArgs) Write(args []string, resolve func(hardware, topology string) (topology.System, error), opts sim.CollectiveOptions) error {
	if o.Out == "" {
		return fmt.Errorf("--output: required: a path ending in .svg or .png")
	}
	format, err := PlotFormat(o.Out)
	if err != nil {
		return err
	}
	if o.Kind != "" && !slices.Contains(PlotKinds, o.Kind) {
		return fmt.Errorf("--kind: must be one of %s (got %q)", strings.Join(PlotKinds, ", "), o.Kind)
	}
	if o.Tolerance < 0 || o.Tolerance >= 1 {
		return fmt.Errorf("--tolerance: must be in [0, 1) (got %g)", o.Tolerance)
	}
	var fig *Figure
	if o.Kind == PlotCollectives {
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
	return WriteFileAtomic(o.Out, func(w io.Writer) error { return fig.Write(w, format) })
}

func (o *PlotArgs) fromFile(path string) (*Figure, error) {
	if fig, ok, err := ResumeFigureFile(path); ok || err != nil {
		return fig, err // partbench.resume/v1: the crossover figure
	}
	d, err := readDocFile(path)
	if err != nil {
		return nil, err
	}
	return DocFigure(d, path, o.Kind, o.Tolerance)
}

// collectives models bus bandwidth for sizes 8 B … 8 GiB with sim.Collective.
func (o *PlotArgs) collectives(resolve func(hardware, topology string) (topology.System, error), opts sim.CollectiveOptions) (*Figure, error) {
	sys, err := resolve(o.Hardware, o.Topology)
	if err != nil {
		return nil, fmt.Errorf("--topology/--hardware: %w", err)
	}
	if o.Ranks < 2 || o.Ranks > sys.Topology.Size() {
		return nil, fmt.Errorf("--ranks: must be in [2, %d] for topology %q (got %d)", sys.Topology.Size(), sys.Topology.Name, o.Ranks)
	}
	return CollectivesFigure(sys, o.Ranks, opts)
}
