package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/partbench/partbench/remote"
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
		Use:   "suite [--spec quick|seed-003|FILE] [--out results] [--resume]",
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
	f.StringVar(&o.out, "out", "results", "directory for runs.jsonl and the outputs")
	f.BoolVar(&o.resume, "resume", false, "continue OUT/runs.jsonl: skip complete cells")
	f.Int64Var(&o.budget, "memory-budget", 8<<30, "bytes the servers' sessions may hold")
	cmd.AddCommand(&cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate results.json, the LaTeX table, the figures and the summary from DIR/runs.jsonl",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return suiteReport(cmd.OutOrStdout(), args[0])
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
	cells := len(s.RunCells())
	fmt.Fprintf(stdout, "suite %s: %d baselines × %d workloads × (%d warm-up + %d runs) = %d runs; the model's estimate on %s over %s: %s (the model's figure on the %s backend's device: real runs add framework overhead, a CPU far more)\n",
		s.Name, len(s.Baselines), len(s.Workloads), s.Warmup, s.Runs, cells*(s.Warmup+s.Runs), s.Hardware, s.Link, est.Round(time.Millisecond), s.Backend)
	eng, err := remote.BackendEngine(s.Backend)
	if err != nil {
		return err
	}
	inproc, err := suite.NewInProcess(eng, o.budget)
	if err != nil {
		return err
	}
	defer inproc.Close()
	var children []*remote.ServerChild
	defer func() {
		for _, c := range children {
			c.Stop(stderr)
		}
	}()
	dial := func(ctx context.Context, b suite.Baseline) (*remote.Client, error) {
		if b.Server == suite.ServerInProcess {
			return inproc.Dial(ctx, b)
		}
		child, addr, err := remote.SpawnServer(b.Transport, stderr, "--backend", s.Backend, "--memory-budget", strconv.FormatInt(o.budget, 10))
		if err != nil {
			return nil, err
		}
		children = append(children, child)
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return remote.Dial(dctx, remote.ClientConfig{Addr: addr, Transport: b.Transport})
	}
	out, err := suite.Run(ctx, suite.Options{Spec: s, Dir: o.out, Resume: o.resume, Engine: eng, Dial: dial, Backend: s.Backend,
		Progress: suiteProgress(stderr)})
	if out != nil && o.resume {
		fmt.Fprintf(stdout, "resume: %d of %d cells were complete and skipped (%d runs kept)\n", out.SkippedCells, cells, out.Skipped)
	}
	if err != nil {
		return err
	}
	if err := suiteReport(stdout, o.out); err != nil {
		return err
	}
	if out.Mismatches > 0 {
		return &exitError{code: exitPayloadMismatch, err: fmt.Errorf("%d runs moved payload bytes that differ from the model's (see mismatches in %s)", out.Mismatches, filepath.Join(o.out, suite.RunsFile))}
	}
	return nil
}

// suiteProgress draws a bar with an ETA on a terminal, plain lines otherwise.
func suiteProgress(w io.Writer) suite.Progress {
	start := time.Now()
	first := -1
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		var bar *progressbar.ProgressBar
		return func(done, total int, line string) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
					progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
			}
			bar.Describe(line)
			_ = bar.Set(done)
		}
	}
	return func(done, total int, line string) {
		if first < 0 {
			first, start = done-1, time.Now()
		}
		eta := "?"
		if n := done - first; n > 0 {
			eta = (time.Since(start) / time.Duration(n) * time.Duration(total-done)).Round(time.Second).String()
		}
		fmt.Fprintf(w, "[%d/%d] %s (ETA %s)\n", done, total, line, eta)
	}
}

// suiteReport regenerates every output from dir's run log.
func suiteReport(w io.Writer, dir string) error {
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
	fmt.Fprintf(w, "\nwrote %s/{%s}\n", dir, joinNames(report.SuiteFiles))
	return nil
}

func joinNames(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}
