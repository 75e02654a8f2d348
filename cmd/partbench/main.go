// Command partbench answers how a dense transformer should be partitioned
// over GPUs and what it will cost: an analytical estimate (model --dry-run)
// and a real run under mpirun/srun or its own launcher, held side by side.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"
)

// version is set at build time: -ldflags "-X main.version=$(git describe)".
var version = "dev"

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "partbench",
		Short: "Estimate and measure how a dense transformer is partitioned over GPUs",
		Long: `partbench compares tensor×pipeline parallelism with layer-wise partitioning.

  partbench model --dry-run                       analytical estimate, no GPU needed
  partbench presets                               list embedded configs and hardware
  mpirun -np 16 partbench --config tp8pp2.toml    run for real, one process per rank`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newModelCmd(), newPresetsCmd(), newClaimsCmd(), newCollectivesCmd(), newRunCmd(), newCalibrateCmd(),
		newSearchCmd(), newBenchCmd(), newPlotCmd(), newCompareCmd(), newL2Cmd(), newNCCLCheckCmd(), newTopoCmd(),
		newServeCmd(), newRemoteCmd(), newGenerateCmd(), newSuiteCmd(), newResumeCmd(), newShardCmd())
	root.AddCommand(newTraceCmd())
	root.AddCommand(newServingCmd())
	addRunFlags(root)
	root.SetFlagErrorFunc(cliflag.FlagErrorFunc)
	addWideFlag(root)
	return root
}

func main() {
	os.Exit(execute(newRootCmd(), os.Args[1:], os.Stderr))
}
