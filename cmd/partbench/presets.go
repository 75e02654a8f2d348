package main

import (
	"strings"

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
			g := report.Grid{Header: []string{"kind", "use as", "names"}}
			for _, k := range []struct{ title, kind, prefix string }{
				{"strategy", "", ""},
				{"test strategy", "test", "test/"},
				{"model", "model", ""},
				{"hardware", "hardware", ""},
				{"topology", "topology", ""},
			} {
				names := configs.Presets(k.kind)
				for i := range names {
					names[i] = k.prefix + names[i]
				}
				g.Rows = append(g.Rows, []string{k.title, presetUse[k.title], strings.Join(names, ", ")})
			}
			g.Wrap = 100
			return report.WriteTables(cmd.OutOrStdout(), format, "presets", version, g)
		},
	}
	cliflag.Format(cmd.Flags(), &format, cliflag.TableFormats...)
	return cmd
}

// presetUse says where each kind of preset is named.
var presetUse = map[string]string{
	"strategy": "--config NAME", "test strategy": "--config test/NAME", "model": "[model] preset",
	"hardware": "[hardware] preset, --hardware", "topology": "[topology] preset, --topology",
}

// loadSystem resolves a hardware and a topology preset by name.
func loadSystem(hardware, topo string) (topology.System, error) {
	g, t, err := configs.LoadSystem(hardware, topo)
	return topology.System{GPU: g, Topology: t}, err
}
