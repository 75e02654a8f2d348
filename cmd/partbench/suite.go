package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/remote/server"

	"github.com/partbench/partbench/progress"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/suite"
)

type suiteOptions struct {
	spec, out string
	resume    bool
	budget    int64
}

func newSuiteCmd() *cobra.Command {
	o := &suiteOptions{}
	cmd := &cobra.Command{
		Use:   "suite [--spec quick|seed-003|FILE] [--output-dir results] [--resume]",
		Short: "Run an evaluation matrix (baselines × workloads × runs) into statistics, a LaTeX table and PDF figures",
		Long: `Run every baseline of a spec on every workload, warm-up runs first, then measured ones.
Each run is appended to OUT/runs.jsonl as it finishes (fsynced), so a killed suite loses at most
the run in flight; --resume skips complete cells. Then writes results.json, speedup_table.tex,
latency_comparison.pdf, network_traffic.pdf and gpu_utilization.pdf, and prints a summary.
Remote baselines talk to a spawned 'partbench serve' on a free loopback port (or a server in
this process for server = "in-process"). Embedded specs: ` + fmt.Sprint(suite.EmbeddedSpecs()) + `.
'partbench suite report DIR' regenerates every output from DIR/runs.jsonl.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.spec, "spec", "quick", "suite spec: an embedded name or a TOML file")
	cliflag.OutputDir(f, &o.out, "results", "directory for runs.jsonl and the outputs", "out")
	f.BoolVar(&o.resume, "resume", false, "continue OUT/runs.jsonl: skip complete cells")
	f.Int64Var(&o.budget, "memory-budget", 8<<30, "bytes the servers' sessions may hold")
	cmd.AddCommand(&cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate results.json, the LaTeX table, the figures and the summary from DIR/runs.jsonl",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return suiteFromLog(cmd.OutOrStdout(), args[0])
		},
	})
	return cmd
}

func (o *suiteOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	s, err := suite.Load(o.spec)
	if err != nil {
		return err
	}
	est, err := suite.EstimateDuration(s)
	if err != nil {
		return err
	}
	report.SuitePlan(stdout, s, est)
	eng, err := server.BackendEngine(s.Backend)
	if err != nil {
		return err
	}
	servers, err := suite.NewServers(eng, s.Backend, o.budget, stderr)
	if err != nil {
		return err
	}
	defer servers.Close()
	out, err := suite.Run(ctx, suite.Options{Spec: s, Dir: o.out, Resume: o.resume, Engine: eng, Dial: servers.Dial, Backend: s.Backend,
		Progress: progress.Described(stderr)})
	if out != nil && o.resume {
		fmt.Fprintf(stdout, "resume: %d of %d cells were complete and skipped (%d runs kept)\n", out.SkippedCells, len(s.RunCells()), out.Skipped)
	}
	if err != nil {
		return err
	}
	if err := suiteFromLog(stdout, o.out); err != nil {
		return err
	}
	if out.Mismatches > 0 {
		return &exitError{code: exitPayloadMismatch, err: fmt.Errorf("%d runs moved payload bytes that differ from the model's (see mismatches in %s)", out.Mismatches, filepath.Join(o.out, suite.RunsFile))}
	}
	return nil
}

// suiteFromLog regenerates every suite output in dir from dir's spec and
// run log (suite.RunsFile), prints the Markdown summary to w and the list
// of files written.
func suiteFromLog(w io.Writer, dir string) error {
	s, err := suite.ReadSpec(dir)
	if err != nil {
		return err
	}
	recs, _, err := suite.ReadLog(filepath.Join(dir, suite.RunsFile))
	if err != nil {
		return err
	}
	res, err := suite.Analyze(s, recs)
	if err != nil {
		return err
	}
	if err := report.WriteSuite(dir, res); err != nil {
		return err
	}
	if err := report.SuiteMarkdown(w, res); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwrote %s/{%s}\n", filepath.Clean(dir), strings.Join(report.SuiteFiles, ","))
	return nil
}
