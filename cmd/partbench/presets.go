package main

import (
	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/topology"
)

func newPresetsCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "presets",
		Short: "List the embedded strategy, model, hardware and topology presets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return report.WriteTables(cmd.OutOrStdout(), format, "presets", version, report.PresetsGrid())
		},
	}
	cliflag.Format(cmd.Flags(), &format, cliflag.TableFormats...)
	return cmd
}

// loadSystem resolves a hardware and a topology preset by name.
func loadSystem(hardware, topo string) (topology.System, error) {
	g, t, err := configs.LoadSystem(hardware, topo)
	return topology.System{GPU: g, Topology: t}, err
}
