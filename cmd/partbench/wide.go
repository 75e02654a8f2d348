package main

import (
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/partbench/partbench/report"
)

// addWideFlag adds --wide to every command: without it, tables printed to
// a terminal drop the columns that do not fit its width (and say which).
func addWideFlag(root *cobra.Command) {
	wide := root.PersistentFlags().Bool("wide", false, "print every column of terminal tables, however wide")
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if *wide || cmd.OutOrStdout() != os.Stdout || !term.IsTerminal(int(os.Stdout.Fd())) {
			return
		}
		if cols, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && cols > 0 {
			cmd.SetOut(report.Fitted{Writer: os.Stdout, Cols: cols})
		}
	}
}
