package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/nvmldiscover"
)

// topoGPUProbePreset is the topology preset named when only the GPU half of
// the preset resolver is wanted (the spec of a discovered machine's hardware preset).
const topoGPUProbePreset = "dgx-h100x2"

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
	return cmd
}

func (o *topoOptions) run(w io.Writer, hardwareSet bool) error {
	var v report.TopoView
	var saved []byte
	if o.preset != "" {
		if o.resolve == nil {
			return errors.New("topo --topology: no preset resolver in this build")
		}
		sys, err := o.resolve(o.hardware, o.preset)
		if err != nil {
			return err
		}
		v = report.TopoPresetView(o.preset, o.hardware, sys)
		saved = []byte(fmt.Sprintf("[hardware]\npreset = %q\n\n[topology]\npreset = %q\n", o.hardware, o.preset))
	} else {
		m, err := o.discover()
		if errors.Is(err, topology.ErrNoGPU) {
			return &exitError{code: topoExitNoGPU, err: err}
		}
		if err != nil {
			return err
		}
		if hardwareSet {
			m.HardwarePreset = o.hardware
		}
		v = report.TopoMachineView(m, o.gpuLookup())
		if o.save != "" {
			var b strings.Builder
			if err := m.SaveTOML(&b); err != nil {
				return fmt.Errorf("--save: %w", err)
			}
			saved = []byte(b.String())
		}
	}
	if o.save != "" {
		if err := os.WriteFile(o.save, saved, 0o644); err != nil {
			return fmt.Errorf("--save: %w", err)
		}
	}
	return report.Topo(w, o.format, version, v)
}

// gpuLookup resolves a hardware preset through the preset resolver; nil
// when there is none.
func (o *topoOptions) gpuLookup() topology.GPULookup {
	if o.resolve == nil {
		return nil
	}
	return func(preset string) (topology.GPU, error) {
		s, err := o.resolve(preset, topoGPUProbePreset)
		return s.GPU, err
	}
}
