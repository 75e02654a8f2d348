package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

type collectivesOptions struct {
	topology string
	hardware string
	op       string
	ranks    string
	sizes    string
	algo     string
	proto    string
	dtype    string
	format   string
	// resolve turns a hardware and a topology preset into a System.
	resolve func(hardwarePreset, topologyPreset string) (topology.System, error)
}

func newCollectivesCmd() *cobra.Command {
	o := &collectivesOptions{resolve: loadSystem}
	cmd := &cobra.Command{
		Use:   "collectives [--preset TOPOLOGY] [--op OP] [--ranks N,M] [--sizes MIN:MAX]",
		Short: "Model NCCL collectives on a topology, printed like nccl-tests",
		Long: `Model the time and bandwidth of an NCCL collective over the first N ranks of a
topology preset, for sizes doubling from MIN to MAX, and print them in the
nccl-tests layout (size, count, type, redop, time, algbw, busbw) with the
algorithm and protocol the model picks, as NCCL's tuner would.

Sizes take nccl-tests suffixes, powers of 1024: 8B, 1K or 1KB, 64M, 8G.
The algorithm and protocol may be forced with --algo/--proto, or with the
NCCL_ALGO/NCCL_PROTO environment variables (same syntax: "ring", "^nvls",
"ring;allreduce:tree"). Time is the collective alone: the host launch cost
(gpu.kernel_launch_s), which the timeline adds per call, is not included.
For send/recv, --ranks N sends from rank 0 to rank N−1.

  partbench collectives --preset dgx-h100x2 --op all_reduce --ranks 8,16 --sizes 8B:8GB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.topology, "preset", "dgx-h100x2", "topology preset")
	f.StringVar(&o.hardware, "hardware", "h100-sxm", "hardware (GPU) preset")
	f.StringVar(&o.op, "op", string(commcount.AllReduce), "all_reduce, all_gather, reduce_scatter, broadcast, reduce, send, recv")
	f.StringVar(&o.ranks, "ranks", "8,16", "comma-separated group sizes; each group is ranks 0..N−1")
	f.StringVar(&o.sizes, "sizes", "8B:8GB", "MIN:MAX (doubling) or one size, nccl-tests style (1K = 1024)")
	f.StringVar(&o.algo, "algo", "", "force the algorithm, NCCL_ALGO syntax (default: $NCCL_ALGO, else the fastest)")
	f.StringVar(&o.proto, "proto", "", "force the protocol, NCCL_PROTO syntax (default: $NCCL_PROTO, else the fastest)")
	f.StringVar(&o.dtype, "dtype", "fp32", "element type for the count column: fp32, fp16, bf16, fp64, int8 (or nccl-tests names)")
	f.StringVar(&o.format, "format", "table", "output format: table, csv, json")
	return cmd
}

func (o *collectivesOptions) run(w io.Writer) error {
	switch o.format {
	case "table", "csv", "json":
	default:
		return fmt.Errorf("--format: must be table, csv or json (got %q)", o.format)
	}
	op, err := sim.ParseCollectiveOp(o.op)
	if err != nil {
		return err
	}
	typeName, typeSize, err := sim.ParseNCCLType(o.dtype)
	if err != nil {
		return err
	}
	counts, err := sim.ParseRankCounts(o.ranks)
	if err != nil {
		return err
	}
	sizes, err := sim.ParseSizeRange(o.sizes)
	if err != nil {
		return err
	}
	if o.resolve == nil {
		return fmt.Errorf("collectives: no system resolver configured")
	}
	sys, err := o.resolve(o.hardware, o.topology)
	if err != nil {
		return err
	}
	opt := sim.OptionsFromEnv(os.Getenv)
	if o.algo != "" {
		opt.Algo = o.algo
	}
	if o.proto != "" {
		opt.Proto = o.proto
	}
	if err := opt.Validate(); err != nil {
		return err
	}
	rows, err := sim.CollectiveSweep(sys, op, counts, sizes, typeName, typeSize, opt)
	if err != nil {
		return err
	}
	return report.Collectives(w, o.format, report.CollectiveSweep{Op: op, Sys: sys, Rows: rows})
}
