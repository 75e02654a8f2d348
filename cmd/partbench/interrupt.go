package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/sigexit"
)

// interruptBound is the bound stated to users: every subcommand ends within
// it of SIGINT/SIGTERM.
const interruptBound = sigexit.Bound

// ExitCode makes exitError a sigexit.ExitCoder.
func (e *exitError) ExitCode() int { return e.code }

// boundsOwnExit: see sigexit.BoundsOwnExit.
func boundsOwnExit(ctx context.Context) { sigexit.BoundsOwnExit(ctx) }

// drainsOnSignal: see sigexit.DrainsOnSignal.
func drainsOnSignal(ctx context.Context) { sigexit.DrainsOnSignal(ctx) }

// execute runs root with args under sigexit.Run and returns the exit code.
func execute(root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	return sigexit.Run("partbench", root.ExecuteContext, stderr)
}
