package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

type benchOptions struct {
	gpus   int
	runs   int
	format string
}

func newBenchCmd() *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench [--gpus 4096] [--runs 3]",
		Short: "Time the partitioning search on a large synthetic model (candidates per second)",
		Long: `Run the search of 'partbench search' on the benchmark's synthetic model — 128 layers,
hidden 16384, 128 heads and KV heads, gated ffn 53248, vocab 128256 with embedding and
LM head, bf16, batch 4096 at context 4096 — over --gpus H100s in DGX nodes of 8, and
print the candidates, the time and the rate of each run. The same search is
BenchmarkSearch in sim/search_test.go; docs/measurements/search-bench.md records results.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.IntVar(&o.gpus, "gpus", 4096, "GPUs of the synthetic system (a multiple of 8)")
	f.IntVar(&o.runs, "runs", 3, "times to run the search")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	return cmd
}

func (o *benchOptions) run(w io.Writer) error {
	spec, runs, err := sim.BenchSearch(o.gpus, o.runs)
	if err != nil {
		return err
	}
	g := report.BenchGrid(fmt.Sprintf("Search benchmark: %s on %d GPUs (%s), %s/%s, GOMAXPROCS %d of %d CPUs, %s",
		spec.Config.Model.Name, o.gpus, spec.System.Topology.Name, runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version()), runs)
	return report.WriteTables(w, o.format, "bench", version, g)
}
