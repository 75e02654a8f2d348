package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/compare"

	"github.com/partbench/partbench/report"
)

func newCompareCmd() *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "compare A.json B.json [C.json ...] [--format table|markdown|csv|json|latex] [--output FILE]",
		Short: "Put saved results of one schema side by side with differences relative to the first",
		Long: `Compare saved JSON results of one schema (model, sweep, search, compare, run or remote).
Records are matched by name — strategies for partbench.model/v1, key value and strategy
for sweeps, candidates for searches, metrics for compare files, mode and phase (bytes,
latency, the naive/stateful gap) for partbench remote's results.json — and each later file's
value is shown beside the first with the relative difference (B − A)/A in percent.
Records missing from some file are listed under the table. --format json writes a
partbench.comparison/v1 document (every file's value and each difference per record and
metric), which 'partbench plot' draws.

  partbench compare before.json after.json --format latex
  partbench compare before.json after.json --format json -o cmp.json && partbench plot cmp.json --output cmp.png`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var docs []*report.Doc
			for _, path := range args {
				d, err := report.ReadDocFile(path)
				if err != nil {
					return err
				}
				docs = append(docs, d)
			}
			files, recs, err := report.RecordsOf(docs)
			if err != nil {
				return err
			}
			rows, unmatched := compare.MatchRecords(files, recs)
			c := &report.Comparison{Files: files, Schema: docs[0].Schema, Rows: rows, Unmatched: unmatched}
			return report.ToOutput(out, cmd.OutOrStdout(), func(w io.Writer) error {
				switch format {
				case report.FormatLaTeX:
					return report.WriteLaTeX(w, c.LaTeXGrid()) // labels in words, no paths
				case report.FormatJSON:
					return report.WriteComparisonJSON(w, c, version) // partbench.comparison/v1, which plot draws
				}
				return report.WriteTables(w, format, "compare", version, c.Grid())
			})
		},
	}
	cliflag.Format(cmd.Flags(), &format, append(cliflag.TableFormats, cliflag.LaTeX)...)
	cliflag.Output(cmd.Flags(), &out, "write to this file instead of standard output", "o", "out")
	return cmd
}
