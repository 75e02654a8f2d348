package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
)

// addRuntimeFlag registers --runtime NAME: the runtime profile whose host
// costs, graph setting and all-reduce replace each config's (model, search).
func addRuntimeFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "runtime", "", "runtime profile for host costs, CUDA graphs and all-reduce: "+strings.Join(configs.Presets("runtime"), ", ")+" (default: the config's [runtime], else the hardware's own keys)")
}
