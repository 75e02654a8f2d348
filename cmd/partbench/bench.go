package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

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
	if o.runs < 1 {
		return fmt.Errorf("--runs: must be ≥ 1 (got %d)", o.runs)
	}
	if o.gpus < 8 || o.gpus%8 != 0 || o.gpus > 8*4096 {
		return fmt.Errorf("--gpus: must be a multiple of 8 in [8, 32768] (got %d)", o.gpus)
	}
	spec, err := sim.SyntheticSearchSpec(o.gpus)
	if err != nil {
		return err
	}
	var runs []report.BenchRun
	for i := 1; i <= o.runs; i++ {
		start := time.Now()
		res, err := sim.Search(spec)
		if err != nil {
			return err
		}
		r := report.BenchRun{Enumerated: res.Enumerated, Feasible: res.Feasible, PrunedMemory: res.PrunedMemory, ElapsedS: time.Since(start).Seconds()}
		if len(res.Rows) > 0 && res.Rows[0].Rank == 1 {
			r.Best = res.Rows[0].Name()
		}
		runs = append(runs, r)
	}
	g := report.BenchGrid(fmt.Sprintf("Search benchmark: %s on %d GPUs (%s), %s/%s, GOMAXPROCS %d of %d CPUs, %s",
		spec.Config.Model.Name, o.gpus, spec.System.Topology.Name, runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version()), runs)
	return report.WriteTables(w, o.format, "bench", version, g)
}
