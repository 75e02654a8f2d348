package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/nccltests"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

type collectivesOptions struct {
	topology   string
	hardware   string
	collective string
	redop      string
	ranks      string
	ngpus      int
	sizes      string
	minBytes   string
	maxBytes   string
	stepFactor int64
	stepBytes  string
	iters      int
	warmup     int
	algo       string
	proto      string
	dtype      string
	format     string
	// resolve turns a hardware and a topology preset into a System.
	resolve func(hardwarePreset, topologyPreset string) (topology.System, error)
}

func newCollectivesCmd() *cobra.Command {
	o := &collectivesOptions{resolve: loadSystem}
	cmd := &cobra.Command{
		Use:   "collectives [COLLECTIVE] [-b MIN] [-e MAX] [-f FACTOR] [-g NGPUS] [-d TYPE] [-o REDOP] [--topology NAME]",
		Short: "Model NCCL collectives on a topology, with nccl-tests' flags and output",
		Long: `Model the time and bandwidth of an NCCL collective (all_reduce, all_gather,
reduce_scatter, broadcast, reduce, sendrecv; all_reduce_perf spellings work too)
over the first -g ranks of a topology preset, and print it as nccl-tests does:
"#" header lines, size, count, type, redop, root, then out-of-place and in-place
time/algbw/busbw/#wrong (modeled: the same figure twice, #wrong N/A), the
algorithm and protocol the model picks (as NCCL's tuner would), and the closing
"# Avg bus bandwidth" line, so scripts that parse all_reduce_perf parse this.

Flags are nccl-tests': -b/--minbytes, -e/--maxbytes, -f/--stepfactor,
-i/--stepbytes, -o/--op (reduction), -d/--datatype, -g/--ngpus (the rank count;
--ranks 8,16 prints one block per count), -n/--iters and -w/--warmup_iters
(printed in the header: the model has no iterations). Sizes take nccl-tests
suffixes, powers of 1024: 8G is 2^33 B (tables elsewhere use SI units, GB = 1e9 B).
--algo/--proto, or NCCL_ALGO/NCCL_PROTO, force the algorithm and protocol
("ring", "^nvls", "ring;allreduce:tree"). Time is the collective alone: the
host launch cost (gpu.kernel_launch_s) is not included. For sendrecv, -g N
sends from rank 0 to rank N−1.

  partbench collectives all_reduce -b 8 -e 8G -f 2 -g 16 --topology dgx-h100x2`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().Changed("collective") {
					return fmt.Errorf("collectives: the collective is given twice (argument %q and --collective %q)", args[0], o.collective)
				}
				o.collective = args[0]
			}
			return o.run(cmd.OutOrStdout(), cmd.Flags())
		},
	}
	f := cmd.Flags()
	cliflag.Underscores(f)
	f.StringVar(&o.topology, "topology", "dgx-h100x2", "topology preset")
	cliflag.Alias(f, "preset", "topology", true)
	f.StringVar(&o.hardware, "hardware", "h100-sxm", "hardware (GPU) preset")
	f.StringVar(&o.collective, "collective", string(commcount.AllReduce), "all_reduce, all_gather, reduce_scatter, broadcast, reduce, sendrecv (or the argument)")
	f.StringVarP(&o.redop, "op", "o", "sum", "reduction op: "+strings.Join(nccltests.Redops, ", ")+" (a collective name here is taken as --collective, deprecated)")
	f.StringVarP(&o.minBytes, "minbytes", "b", "8", "smallest size (nccl-tests suffixes: 1K = 1024)")
	f.StringVarP(&o.maxBytes, "maxbytes", "e", "8G", "largest size")
	f.Int64VarP(&o.stepFactor, "stepfactor", "f", 2, "multiply the size by this each step (1: add --stepbytes)")
	f.StringVarP(&o.stepBytes, "stepbytes", "i", "1M", "bytes added each step when --stepfactor is 1")
	f.IntVarP(&o.ngpus, "ngpus", "g", 0, "ranks in the group: ranks 0..N−1 (default: --ranks)")
	f.StringVar(&o.ranks, "ranks", "8,16", "comma-separated group sizes, one block each")
	f.StringVar(&o.sizes, "sizes", "", "MIN:MAX doubling, or one size (shorthand for -b MIN -e MAX -f 2)")
	f.StringVarP(&o.dtype, "datatype", "d", "float", "element type: float, half, bfloat16, double, int8, int32 (or fp32, fp16, bf16, …)")
	cliflag.Alias(f, "dtype", "datatype", true)
	f.IntVarP(&o.iters, "iters", "n", 20, "iterations (header only: the model has none)")
	f.IntVarP(&o.warmup, "warmup-iters", "w", 5, "warm-up iterations (header only)")
	f.StringVar(&o.algo, "algo", "", "force the algorithm, NCCL_ALGO syntax (default: $NCCL_ALGO, else the fastest)")
	f.StringVar(&o.proto, "proto", "", "force the protocol, NCCL_PROTO syntax (default: $NCCL_PROTO, else the fastest)")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	cliflag.DefaultInUsage(f, "ngpus")
	return cmd
}

func (o *collectivesOptions) run(w io.Writer, flags *pflag.FlagSet) error {
	collective, redop := o.collective, o.redop
	if _, err := sim.ParseCollectiveOp(redop); err == nil { // the old --op all_reduce
		if flags.Changed("collective") {
			return fmt.Errorf("-o/--op %q: a collective; --op is the reduction (%s) and --collective is given", redop, strings.Join(nccltests.Redops, ", "))
		}
		collective, redop = redop, "sum"
	}
	if strings.EqualFold(strings.TrimSuffix(collective, "_perf"), "sendrecv") {
		collective = string(commcount.Send)
	}
	op, err := sim.ParseCollectiveOp(strings.TrimSuffix(collective, "_perf"))
	if err != nil {
		return fmt.Errorf("collective %q: must be one of all_reduce, all_gather, reduce_scatter, broadcast, reduce, sendrecv", collective)
	}
	if redop, err = nccltests.Redop(redop); err != nil {
		return err
	}
	typeName, typeSize, err := sim.ParseNCCLType(o.dtype)
	if err != nil {
		return fmt.Errorf("-d/--datatype: %w", err)
	}
	counts, err := sim.ParseRankCounts(o.ranks)
	if err != nil {
		return err
	}
	if flags.Changed("ngpus") {
		if o.ngpus < 1 {
			return fmt.Errorf("-g/--ngpus: must be ≥ 1 (got %d)", o.ngpus)
		}
		counts = []int{o.ngpus}
	}
	rng, err := nccltests.Range{MinBytes: o.minBytes, MaxBytes: o.maxBytes, StepBytes: o.stepBytes, StepFactor: o.stepFactor, Sizes: o.sizes}.Resolve(sim.ParseSize, sim.ParseSizeRange)
	if err != nil {
		return err
	}
	s := report.CollectiveSweep{Op: op, Iters: o.iters, Warmup: o.warmup,
		MinBytes: rng.MinBytes, MaxBytes: rng.MaxBytes, StepFactor: rng.StepFactor, StepBytes: rng.StepBytes}
	if o.iters < 1 || o.warmup < 0 {
		return fmt.Errorf("-n/--iters %d, -w/--warmup_iters %d: need iters ≥ 1 and warmup ≥ 0", o.iters, o.warmup)
	}
	if o.resolve == nil {
		return fmt.Errorf("collectives: no system resolver configured")
	}
	if s.Sys, err = o.resolve(o.hardware, o.topology); err != nil {
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
	if s.Rows, err = sim.CollectiveSweep(s.Sys, op, counts, rng.Sizes, typeName, typeSize, opt); err != nil {
		return err
	}
	s.Redop, s.Root = nccltests.Columns(op, redop)
	return report.Collectives(w, o.format, s)
}
