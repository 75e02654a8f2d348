package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/nccltests"
)

func newCollectivesCmd() *cobra.Command {
	o := &collectivesArgs{}
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
-i/--stepbytes, -o/--op (reduction), -d/--datatype, -t/--nthreads and
-g/--ngpus, -r/--root, -n/--iters, -w/--warmup_iters, -m/--agg_iters,
-c/--check and -G/--cudagraph (printed in nccl-tests' header line), and
-z, -y, -a, -p, -R, -N, -T (accepted, checked and echoed on a header line:
they change how nccl-tests measures, not what one collective costs on the
device). -C 1 (CPU time) is refused: the model has device time only.

Where -g differs: nccl-tests' -g is GPUs per thread, and a run has
processes × threads × GPUs ranks. The model has one process, so here the
group is -t × -g ranks (-g 16 is a 16-rank group, as all_reduce_perf -g 16
on one 16-GPU process would be); to model "mpirun -np 16 all_reduce_perf
-g 1", give -g 16. Without -g or -t, --ranks 8,16 prints one block per count.
The algo column uses NCCL's names: Ring, Tree, NVLS, NVLSTree (CollNet and
PAT are not modelled). Sizes take nccl-tests
suffixes, powers of 1024: 8G is 2^33 B (tables elsewhere use SI units, GB = 1e9 B).
--algo/--proto, or NCCL_ALGO/NCCL_PROTO, force the algorithm and protocol
("ring", "^nvls", "ring;allreduce:tree"). Time is the collective alone: the
host launch cost (gpu.kernel_launch_s) is not included. For sendrecv, -g N
sends from rank 0 to rank N−1.

--measured FILE (repeat it, or comma-separate several) reads the output of a
real nccl-tests run (all_reduce_perf … > FILE) and prints it beside the model
of the same collective, rank count and sizes on --topology: measured
out-of-place time and busbw, the model's algo/proto, time and busbw, and the
busbw error (modeled − measured) / measured, then the median |error| over the
sizes ≥ 1 MiB and how many are beyond 15 %. --fit then fits the topology's
collective constants (the pipeline ramp and the NVLS overhead,
docs/collectives.md) to the files and prints them, with the errors before and
after, as a [topology.collectives] section for a config's [topology].

  partbench collectives all_reduce -b 8 -e 8G -f 2 -g 16 --topology dgx-h100x2
  partbench collectives --measured all_reduce.txt --topology dgx-h100x2
  partbench collectives --measured ar8.txt,ag8.txt --fit`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().Changed("collective") {
					return fmt.Errorf("collectives: the collective is given twice (argument %q and --collective %q)", args[0], o.Collective)
				}
				o.Collective = args[0]
			}
			changed := func(name string) bool {
				if name == "collective" && len(args) == 1 {
					return true // the argument is the collective given explicitly
				}
				return cliflag.Changed(cmd.Flags(), name)
			}
			return o.Write(cmd.OutOrStdout(), loadSystem, changed)
		},
	}
	f := cmd.Flags()
	cliflag.Underscores(f)
	f.StringVar(&o.Topology, "topology", "dgx-h100x2", "topology preset")
	cliflag.Alias(f, "preset", "topology", true)
	f.StringVar(&o.Hardware, "hardware", "h100-sxm", "hardware (GPU) preset")
	f.StringVar(&o.Collective, "collective", string(commcount.AllReduce), "all_reduce, all_gather, reduce_scatter, broadcast, reduce, sendrecv (or the argument)")
	f.StringVarP(&o.Redop, "op", "o", "sum", "reduction op: "+strings.Join(nccltests.Redops, ", ")+" (a collective name here is taken as --collective, deprecated)")
	f.StringVarP(&o.MinBytes, "minbytes", "b", "8", "smallest size (nccl-tests suffixes: 1K = 1024)")
	f.StringVarP(&o.MaxBytes, "maxbytes", "e", "8G", "largest size")
	f.Int64VarP(&o.StepFactor, "stepfactor", "f", 2, "multiply the size by this each step (1: add --stepbytes)")
	f.StringVarP(&o.StepBytes, "stepbytes", "i", "1M", "bytes added each step when --stepfactor is 1")
	f.IntVarP(&o.NGPUs, "ngpus", "g", 0, "ranks in the group: ranks 0..N−1 (default: --ranks)")
	f.StringVar(&o.Ranks, "ranks", "8,16", "comma-separated group sizes, one block each")
	f.StringVar(&o.Sizes, "sizes", "", "MIN:MAX doubling, or one size (shorthand for -b MIN -e MAX -f 2)")
	f.StringVarP(&o.DType, "datatype", "d", "float", "element type: float, half, bfloat16, double, int8, int32 (or fp32, fp16, bf16, …)")
	cliflag.Alias(f, "dtype", "datatype", true)
	f.IntVarP(&o.Iters, "iters", "n", 20, "iterations (header only: the model has none)")
	f.IntVarP(&o.Warmup, "warmup-iters", "w", 5, "warm-up iterations (header only)")
	nt := &o.NCCLTests
	f.IntVarP(&nt.NThreads, "nthreads", "t", 1, "threads per process: the group is -t × -g ranks (one process)")
	f.IntVarP(&nt.Root, "root", "r", 0, "root rank of broadcast and reduce")
	f.IntVarP(&nt.AggIters, "agg-iters", "m", 1, "operations aggregated per iteration (header only)")
	f.IntVarP(&nt.Check, "check", "c", 1, "validation iterations (header only: nothing is checked, #wrong is N/A)")
	f.IntVarP(&nt.CudaGraph, "cudagraph", "G", 0, "CUDA graph launches (header only: the time excludes host launch)")
	f.IntVarP(&nt.Blocking, "blocking", "z", 0, "0/1: blocking collectives (echoed)")
	f.IntVarP(&nt.StreamNull, "stream-null", "y", 0, "0/1: the default stream (echoed)")
	f.IntVarP(&nt.Average, "average", "a", 1, "0-3: rank 0, average, min, max (echoed: every modeled rank is alike)")
	f.IntVarP(&nt.ParallelInit, "parallel-init", "p", 0, "0/1: initialise NCCL in parallel (echoed)")
	f.IntVarP(&nt.LocalRegister, "local-register", "R", 0, "0-2: buffer registration (echoed)")
	f.IntVarP(&nt.RunCycles, "run-cycles", "N", 0, "run cycles (echoed)")
	f.IntVarP(&nt.Timeout, "timeout", "T", 0, "seconds before nccl-tests gives up (echoed)")
	f.IntVarP(&nt.ReportCPUTime, "report-cputime", "C", 0, "must be 0: the model has device time only")
	f.StringVar(&o.Algo, "algo", "", "force the algorithm, NCCL_ALGO syntax (default: $NCCL_ALGO, else the fastest)")
	f.StringVar(&o.Proto, "proto", "", "force the protocol, NCCL_PROTO syntax (default: $NCCL_PROTO, else the fastest)")
	f.StringSliceVar(&o.Measured, "measured", nil, "nccl-tests output file(s) to print beside the model (repeat or comma-separate)")
	f.BoolVar(&o.Fit, "fit", false, "with --measured: fit the topology's collective constants (ramp, NVLS overhead) to the files and print them as a [topology.collectives] section")
	cliflag.Format(f, &o.Format, cliflag.TableFormats...)
	cliflag.DefaultInUsage(f, "ngpus")
	return cmd
}
