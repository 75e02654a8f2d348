package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/exec/ncclcomm"
	"github.com/partbench/partbench/report"
)

type ncclCheckOptions struct {
	device  int
	count   int
	timeout time.Duration
}

func newNCCLCheckCmd() *cobra.Command {
	o := &ncclCheckOptions{}
	cmd := &cobra.Command{
		Use:   "nccl-check [--device N] [--count N]",
		Short: "Load the CUDA driver and NCCL, and run an all-reduce and a send/recv on one GPU",
		Long: `Load libcuda and NCCL the way a run does (PARTBENCH_CUDA_LIB, PARTBENCH_NCCL_LIB,
LD_LIBRARY_PATH, CUDA_HOME, the system loader, Python wheels), print where each
was found and its version, create a one-rank NCCL communicator on the GPU, and
run on a small device buffer of float32 an all-reduce (which over one rank
copies its input) and a send/recv to itself in one group. Both results are
read back and compared; the communicator's counters are printed.

Without a driver or NCCL it fails with one line naming every place searched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.device, "device", 0, "GPU ordinal")
	f.IntVar(&o.count, "count", 1<<20, "float32 elements per buffer")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "limit for the whole check")
	return cmd
}

func (o *ncclCheckOptions) run(ctx context.Context, w io.Writer) error {
	res, err := ncclcomm.SelfTest(ctx, ncclcomm.SelfTestOptions{Device: o.device, Count: o.count, Timeout: o.timeout})
	if rerr := report.NCCLCheck(w, res); err == nil {
		err = rerr
	}
	return err
}
