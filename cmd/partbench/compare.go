package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/report"
)

func newCompareCmd() *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "compare A.json B.json [C.json ...] [--format table|markdown|latex|csv]",
		Short: "Put saved results of one schema side by side with differences relative to the first",
		Long: `Compare saved JSON results of one schema (model, sweep, search, compare, run or remote).
Records are matched by name — strategies for partbench.model/v1, key value and strategy
for sweeps, candidates for searches, metrics for compare files, mode and phase (bytes,
latency, the naive/stateful gap) for partbench remote's results.json — and each later file's
value is shown beside the first with the relative difference (B − A)/A in percent.
Records missing from some file are listed under the table.

  partbench compare before.json after.json --format latex`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := report.CheckFormat(format, report.FormatTable, report.FormatMarkdown, report.FormatLaTeX, report.FormatCSV); err != nil {
				return err
			}
			var docs []*report.Doc
			for _, path := range args {
				d, err := readDocFile(path)
				if err != nil {
					return err
				}
				docs = append(docs, d)
			}
			c, err := report.Compare(docs)
			if err != nil {
				return err
			}
			write := func(w io.Writer) error { return report.WriteGrid(w, format, c.Grid()) }
			if out != "" {
				return report.WriteFileAtomic(out, write)
			}
			return write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&format, "format", report.FormatTable, "output format: table, markdown, latex, csv")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of standard output")
	return cmd
}

func readDocFile(path string) (*report.Doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	defer f.Close()
	return report.ReadDoc(f, path)
}
