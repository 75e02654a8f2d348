package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/tracestats"
)

func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Work with Chrome/Perfetto traces partbench writes (model --trace, run --trace)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newTraceStatsCmd())
	return cmd
}

type traceStatsOptions struct {
	by       string
	perRank  bool
	perPhase bool
	format   string
	output   string
}

func newTraceStatsCmd() *cobra.Command {
	o := &traceStatsOptions{}
	cmd := &cobra.Command{
		Use:   "stats FILE",
		Short: "Time by op as nsys stats prints it: total, %, count, mean, median, min, max, stddev",
		Long: `Summarise a Chrome/Perfetto trace (partbench's model --trace and run --trace,
or any trace-event JSON) as Nsight Systems' nsys stats summarises a report:
per process, the time spent in each op (or op kind with --by kind), its share
of the process's op time, the number of instances and their mean, median,
min, max and standard deviation. --per-rank and --per-phase split the tables.

When the trace holds a measured run beside its model ("NAME (measured)" and
"NAME (modeled)", as run --trace writes it), a last table pairs each op with
its model: counts of both sides, mean per instance, and the error
(modeled − measured)/measured. Means are compared, not totals: a run and its
model may cover different decode steps or ranks.

FILE may be - for standard input. Complete ("X") events and begin/end
("B"/"E") pairs are timed; metadata, flows and instants are skipped.

  partbench model --dry-run --trace model.json && partbench trace stats model.json
  partbench run --config test/tp2-tiny --nproc 2 --trace run.json
  partbench trace stats run.json --by kind --per-phase`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.InOrStdin(), cmd.OutOrStdout(), args[0])
		},
	}
	f := cmd.Flags()
	cliflag.Choice(f, &o.by, "by", "group ops by", string(tracestats.ByName), string(tracestats.ByKind))
	f.BoolVar(&o.perRank, "per-rank", false, "one table per rank (tid) instead of all ranks together")
	f.BoolVar(&o.perPhase, "per-phase", false, "one table per phase (prefill, decode, …)")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	cliflag.Output(f, &o.output, "write the summary to FILE instead of standard output")
	return cmd
}

func (o *traceStatsOptions) run(stdin io.Reader, stdout io.Writer, file string) error {
	opts := tracestats.Options{By: tracestats.By(o.by), PerRank: o.perRank, PerPhase: o.perPhase}
	if err := opts.Check(); err != nil {
		return err
	}
	tr, err := tracestats.ReadFile(file, stdin)
	if err != nil {
		return err
	}
	rows := tracestats.Summarize(tr, opts)
	s := report.TraceStats{File: file, Options: opts, Rows: rows, Pairs: tracestats.Pairs(rows)}
	return report.ToOutput(o.output, stdout, func(w io.Writer) error {
		return report.WriteTraceStats(w, o.format, version, s)
	})
}
