package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

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
	op, err := parseOp(o.op)
	if err != nil {
		return err
	}
	typeName, typeSize, err := parseDType(o.dtype)
	if err != nil {
		return err
	}
	counts, err := parseRankCounts(o.ranks)
	if err != nil {
		return err
	}
	sizes, err := parseSizeRange(o.sizes)
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
	redop := "sum"
	if op == commcount.AllGather || op == commcount.Broadcast || !op.Collective() {
		redop = "none"
	}

	var rows []report.CollectiveRow
	for _, n := range counts {
		if n > sys.Topology.Size() {
			return fmt.Errorf("--ranks: %d ranks, but topology %q has %d GPUs", n, sys.Topology.Name, sys.Topology.Size())
		}
		ranks := make([]int, n)
		for i := range ranks {
			ranks[i] = i
		}
		if !op.Collective() {
			if n < 2 {
				return fmt.Errorf("--ranks: %s needs at least 2 ranks (it sends from rank 0 to rank N−1)", op)
			}
			ranks = []int{0, n - 1}
		}
		for _, size := range sizes {
			// nccl-tests rounds the size down to whole elements on every rank.
			per := typeSize
			if op == commcount.AllGather || op == commcount.ReduceScatter {
				per *= int64(n)
			}
			bytes := size / per * per
			count := bytes / typeSize
			if op == commcount.AllGather || op == commcount.ReduceScatter {
				count /= int64(n) // nccl-tests prints the per-rank count
			}
			e, err := sim.Collective(sys, op, ranks, bytes, opt)
			if err != nil {
				return err
			}
			rows = append(rows, report.CollectiveRow{
				Ranks: n, SizeBytes: bytes, Count: count, Type: typeName, Redop: redop,
				Algo: e.Algo, Proto: e.Proto, TimeS: e.TimeS,
				AlgBWBytesPerS: e.AlgBWBytesPerS, BusBWBytesPerS: e.BusBWBytesPerS,
				Link: e.Link, LatencyBound: e.LatencyBound,
			})
		}
	}
	return report.Collectives(w, o.format, report.CollectiveSweep{Op: op, Sys: sys, Rows: rows})
}

// parseOp accepts commcount names (all_reduce) and NCCL's (allreduce, AllReduce).
func parseOp(s string) (commcount.Op, error) {
	k := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "")
	for _, op := range []commcount.Op{commcount.AllReduce, commcount.AllGather, commcount.ReduceScatter,
		commcount.Broadcast, commcount.Reduce, commcount.Send, commcount.Recv} {
		if k == strings.ReplaceAll(string(op), "_", "") {
			return op, nil
		}
	}
	return "", fmt.Errorf("--op: unknown collective %q (all_reduce, all_gather, reduce_scatter, broadcast, reduce, send, recv)", s)
}

// parseDType maps partbench and nccl-tests type names to the nccl-tests name
// and the element size.
func parseDType(s string) (string, int64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp32", "float", "float32":
		return "float", 4, nil
	case "fp16", "half", "float16":
		return "half", 2, nil
	case "bf16", "bfloat16":
		return "bfloat16", 2, nil
	case "fp64", "double", "float64":
		return "double", 8, nil
	case "int8", "fp8", "uint8":
		return "int8", 1, nil
	case "int32":
		return "int32", 4, nil
	}
	return "", 0, fmt.Errorf("--dtype: unknown type %q (fp32, fp16, bf16, fp64, int8, int32)", s)
}

func parseRankCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--ranks: %q is not a positive rank count", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--ranks: no rank count given")
	}
	return out, nil
}

// parseSizeRange reads "MIN:MAX" (doubling from MIN while ≤ MAX, as
// nccl-tests -f 2) or a single size.
func parseSizeRange(s string) ([]int64, error) {
	lo, hi, isRange := strings.Cut(s, ":")
	a, err := parseSize(lo)
	if err != nil {
		return nil, err
	}
	if !isRange {
		return []int64{a}, nil
	}
	b, err := parseSize(hi)
	if err != nil {
		return nil, err
	}
	if a > b {
		return nil, fmt.Errorf("--sizes: minimum %d B is above maximum %d B", a, b)
	}
	if a == 0 {
		return nil, fmt.Errorf("--sizes: a doubling range cannot start at 0 B")
	}
	var out []int64
	for v := a; v <= b; v *= 2 {
		out = append(out, v)
		if v > b/2 {
			break
		}
	}
	return out, nil
}

// parseSize reads a byte count with an optional nccl-tests suffix: K, M, G, T
// (powers of 1024), optionally followed by B or iB; a bare B means bytes.
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("--sizes: cannot read %q as a size (examples: 8B, 1K, 64MB, 8GB)", s)
	}
	if mult > 1 && v > (1<<62)/mult {
		return 0, fmt.Errorf("--sizes: %q is too large", s)
	}
	return v * mult, nil
}
