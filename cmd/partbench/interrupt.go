package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/sigexit"
)

// interruptBound is the bound stated to users: every subcommand ends within
// it of SIGINT/SIGTERM.
const interruptBound = sigexit.Bound

// ExitCode makes exitError a sigexit.ExitCoder.
func (e *exitError) ExitCode() int { return e.code }

// execute runs root with args under sigexit.Run and returns the exit code.
// A rank that stopped only because another rank failed exits
// launch.ExitPeerFailed, so a launcher names the failing rank.
func execute(root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	return sigexit.Run("partbench", func(ctx context.Context) error {
		// The profile is named by the subcommand args reach (the root's
		// name, partbench, for a run without one), not by a flag's value.
		name := root.Name()
		if c, _, err := root.Find(args); err == nil {
			name = c.Name()
		}
		stop, err := startProfile(name, stderr)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		defer stop()
		err = root.ExecuteContext(ctx)
		var ee *exitError
		if rendezvous.PeerFailed(err) && !errors.As(err, &ee) {
			return &exitError{code: launch.ExitPeerFailed, err: err}
		}
		return err
	}, stderr)
}
