package report

import (
	"strings"

	"github.com/partbench/partbench/configs"
)

// presetUse says where each kind of preset is named.
var presetUse = map[string]string{
	"strategy": "--config NAME", "test strategy": "--config test/NAME", "model": "[model] preset",
	"hardware": "[hardware] preset, --hardware", "topology": "[topology] preset, --topology",
	"runtime": "[runtime] preset, --runtime",
}

// PresetsGrid lists the embedded presets by kind (strategy, test strategy,
// model, hardware, topology, runtime), where each is named, and their names.
func PresetsGrid() Grid {
	g := Grid{Header: []string{"kind", "use as", "names"}}
	for _, k := range []struct{ title, kind, prefix string }{
		{"strategy", "", ""},
		{"test strategy", "test", "test/"},
		{"model", "model", ""},
		{"hardware", "hardware", ""},
		{"topology", "topology", ""},
		{"runtime", "runtime", ""},
	} {
		names := configs.Presets(k.kind)
		for i := range names {
			names[i] = k.prefix + names[i]
		}
		g.Rows = append(g.Rows, []string{k.title, presetUse[k.title], strings.Join(names, ", ")})
	}
	g.Wrap = 100
	return g
}
