package main

import (
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/fileio"
	"github.com/partbench/partbench/report"
)

// addWideFlag adds --wide to every command: without it, tables printed to
// a terminal drop the columns that do not fit its width (and say which).
// Before any command runs, every output file it was given is probed
// (cliflag.CheckOutputFiles), so a path that cannot be written is refused
// before the work, not after it.
func addWideFlag(root *cobra.Command) {
	wide := root.PersistentFlags().Bool("wide", false, "print every column of terminal tables, however wide")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := cliflag.CheckOutputFiles(cmd.Flags(), fileio.CheckWritable); err != nil {
			return err
		}
		if *wide || cmd.OutOrStdout() != os.Stdout || !term.IsTerminal(int(os.Stdout.Fd())) {
			return nil
		}
		if cols, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && cols > 0 {
			cmd.SetOut(report.Fitted{Writer: os.Stdout, Cols: cols})
		}
		return nil
	}
}
