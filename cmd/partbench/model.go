package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

type modelOptions struct {
	dryRun      bool
	configs     []string
	compare     []string
	format      string
	perRank     bool
	decodeSteps int
	out         string
	trace       string
}

func newModelCmd() *cobra.Command {
	o := &modelOptions{}
	cmd := &cobra.Command{
		Use:   "model --dry-run [--config FILE] [--compare FILE]...",
		Short: "Estimate TTFT, TPOT, TPS, memory and communication of partitionings (no GPU needed)",
		Long: `Estimate each strategy with the analytical, topology-aware cost model.

With no --config the embedded seed comparison runs: tp8pp2 against layerwise16.
A config is a TOML file or the name of an embedded preset (see 'partbench presets').
The first strategy is the baseline of the comparison table.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "estimate analytically without running anything (required: measurement is 'partbench run')")
	f.StringArrayVar(&o.configs, "config", nil, "strategy config: a TOML file or an embedded preset name (repeatable)")
	f.StringArrayVar(&o.compare, "compare", nil, "further strategies to compare with the first (repeatable)")
	f.StringVar(&o.format, "format", report.FormatTable, "output format: table, markdown, csv, json")
	f.BoolVar(&o.perRank, "per-rank", false, "add one row per rank")
	f.IntVar(&o.decodeSteps, "decode-steps", 6, "decode steps the timeline simulates to reach steady state (≥ 3)")
	f.StringVarP(&o.out, "output", "o", "", "write to this file instead of standard output")
	f.StringVar(&o.trace, "trace", "", "write the simulated timeline as a Chrome/Perfetto trace (JSON) to this file")
	return cmd
}

func (o *modelOptions) run(stdout io.Writer) error {
	if !o.dryRun {
		return fmt.Errorf("model needs --dry-run: it only estimates; to measure, run 'partbench run' or 'mpirun -np N partbench --config FILE'")
	}
	if err := report.CheckFormat(o.format, report.FormatTable, report.FormatMarkdown, report.FormatCSV, report.FormatJSON); err != nil {
		return err
	}
	names := append(append([]string{}, o.configs...), o.compare...)
	if len(names) == 0 {
		names = configs.DefaultStrategies
	}
	var es []*sim.Estimate
	for _, n := range names {
		cfg, err := configs.Load(n)
		if err != nil {
			return err
		}
		e, err := estimateConfig(cfg, sim.Options{DecodeSteps: o.decodeSteps, Collectives: collectiveOptionsFromEnv()})
		if err != nil {
			return err
		}
		es = append(es, e)
	}
	if o.trace != "" {
		var spans []report.Span
		for _, e := range es {
			spans = append(spans, report.EstimateSpans(e)...)
		}
		if err := writeFileAtomic(o.trace, func(w io.Writer) error { return report.ChromeTrace(w, spans) }); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
	}
	w := stdout
	if o.out != "" {
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	switch o.format {
	case report.FormatJSON:
		return report.ModelJSON(w, version, es)
	case report.FormatCSV:
		return report.ModelCSV(w, es, o.perRank)
	default:
		return report.WriteGrids(w, o.format, report.ModelGrids(es, o.perRank)...)
	}
}

// estimateConfig plans and estimates one config.
func estimateConfig(cfg *configs.Config, opts sim.Options) (*sim.Estimate, error) {
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	return sim.EstimatePlan(plan, opts)
}

func collectiveOptionsFromEnv() sim.CollectiveOptions {
	return sim.OptionsFromEnv(os.Getenv)
}
