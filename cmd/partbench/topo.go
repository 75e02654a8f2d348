package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/nvmldiscover"
)

// topoExitNoGPU is the exit status when there is no GPU to discover.
const topoExitNoGPU = 2

type topoOptions struct {
	preset   string
	hardware string
	format   string
	save     string
	// discover reads this machine; tests replace it with a fake.
	discover func() (*topology.Machine, error)
	// resolve turns a hardware and a topology preset into a System (the
	// embedded presets; tests give canned systems).
	resolve func(hardware, topology string) (topology.System, error)
}

func newTopoCmd() *cobra.Command {
	return (&topoOptions{discover: nvmldiscover.DiscoverLocal, resolve: loadSystem}).command()
}

func (o *topoOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topo [--topology NAME] [--hardware NAME] [--format table|markdown|csv|json|dot] [--save FILE]",
		Short: "Show this machine's GPU topology (through NVML) or a preset's, and the paths partbench models",
		Long: `Without --topology, read this machine's GPUs through NVML and print the GPU×GPU
matrix as nvidia-smi topo -m does (NV<n>: n NVLinks, directly or through an
NVSwitch; PIX, PXB, PHB, NODE, SYS: the PCIe path), every GPU's facts, the
driver and CUDA versions, and the bandwidth and latency partbench will use for
each path class. The hardware preset is matched by GPU name; --hardware names
another. With no GPU or no NVML it says so and exits with status 2.

With --topology, show a topology preset the same way, on the --hardware GPU:
one node's GPUs and NICs with the nvidia-smi codes, and the link between nodes.

--format dot draws the link graph for Graphviz (dot -Tsvg); --save writes the
[hardware] and [topology] sections of a config (docs/topology.md).

  partbench topo
  partbench topo --save mybox.toml
  partbench topo --topology dgx-h100x2 --format dot | dot -Tsvg > dgx.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.OutOrStdout(), cmd.Flags().Changed("hardware"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.preset, "topology", "", "topology preset to show instead of this machine, e.g. dgx-h100x2")
	cliflag.Alias(f, "preset", "topology", true)
	f.StringVar(&o.hardware, "hardware", "h100-sxm", "hardware (GPU) preset; for this machine it replaces the one matched by GPU name")
	cliflag.Format(f, &o.format, append(cliflag.TableFormats, cliflag.DOT)...)
	f.StringVar(&o.save, "save", "", "write the [hardware] and [topology] config sections to FILE")
	cliflag.MarkOutputFile(f, "save")
	return cmd
}

func (o *topoOptions) run(w io.Writer, hardwareSet bool) error {
	err := report.ShowTopo(w, o.format, version, report.TopoRequest{Preset: o.preset, Hardware: o.hardware, HardwareSet: hardwareSet,
		Save: o.save, Discover: o.discover, Resolve: o.resolve})
	if errors.Is(err, topology.ErrNoGPU) {
		return &exitError{code: topoExitNoGPU, err: err}
	}
	return err
}
