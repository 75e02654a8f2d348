package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
)

func newPresetsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "presets",
		Short: "List the embedded strategy, model, hardware and topology presets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			for _, k := range []struct{ title, kind, prefix string }{
				{"strategies (--config NAME)", "", ""},
				{"test strategies (--config test/NAME)", "test", "test/"},
				{"models ([model] preset)", "model", ""},
				{"hardware ([hardware] preset)", "hardware", ""},
				{"topologies ([topology] preset)", "topology", ""},
			} {
				names := configs.Presets(k.kind)
				for i := range names {
					names[i] = k.prefix + names[i]
				}
				fmt.Fprintf(w, "%-40s %s\n", k.title, strings.Join(names, ", "))
			}
			return nil
		},
	}
}

// loadSystem resolves a hardware and a topology preset by name.
func loadSystem(hardware, topo string) (topology.System, error) {
	g, t, err := configs.LoadSystem(hardware, topo)
	return topology.System{GPU: g, Topology: t}, err
}
