package sim

// The collective model swept over group sizes and message sizes the way
// nccl-tests runs a collective, with nccl-tests' syntax for sizes, types and
// ops (partbench collectives, partbench plot --kind collectives).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// CollectiveRow is one modeled collective, one line of nccl-tests' layout.
type CollectiveRow struct {
	Ranks          int                 `json:"ranks"`
	SizeBytes      int64               `json:"size_bytes"`
	Count          int64               `json:"count"`
	Type           string              `json:"type"`
	Redop          string              `json:"redop"`
	Algo           commcount.Algorithm `json:"algo"`
	Proto          string              `json:"proto"`
	TimeS          float64             `json:"time_s"`
	AlgBWBytesPerS float64             `json:"algbw_bytes_per_s"`
	BusBWBytesPerS float64             `json:"busbw_bytes_per_s"`
	Link           topology.LinkClass  `json:"link"`
	LatencyBound   bool                `json:"latency_bound"`
}

// GroupRanks is the group a sweep of n ranks models: ranks 0..n−1, or for
// send/recv the pair from rank 0 to rank n−1.
func GroupRanks(op commcount.Op, n int) []int {
	if !op.Collective() {
		return []int{0, n - 1}
	}
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = i
	}
	return ranks
}

// CollectiveSweep models op over the first n ranks of sys for every n in
// groups and every size, as nccl-tests runs it: sizes are rounded down to
// whole elements of typeName (typeBytes each) on every rank, and send/recv
// goes from rank 0 to rank n−1. Errors name the flag they come from.
func CollectiveSweep(sys topology.System, op commcount.Op, groups []int, sizes []int64, typeName string, typeBytes int64, opt CollectiveOptions) ([]CollectiveRow, error) {
	redop := "sum"
	if op == commcount.AllGather || op == commcount.Broadcast || !op.Collective() {
		redop = "none"
	}
	var rows []CollectiveRow
	for _, n := range groups {
		if n > sys.Topology.Size() {
			return nil, fmt.Errorf("--ranks: %d ranks, but topology %q has %d GPUs", n, sys.Topology.Name, sys.Topology.Size())
		}
		if !op.Collective() && n < 2 {
			return nil, fmt.Errorf("--ranks: %s needs at least 2 ranks (it sends from rank 0 to rank N−1)", op)
		}
		ranks := GroupRanks(op, n)
		for _, size := range sizes {
			// nccl-tests rounds the size down to whole elements on every rank.
			per := typeBytes
			if op == commcount.AllGather || op == commcount.ReduceScatter {
				per *= int64(n)
			}
			bytes := size / per * per
			count := bytes / typeBytes
			if op == commcount.AllGather || op == commcount.ReduceScatter {
				count /= int64(n) // nccl-tests prints the per-rank count
			}
			e, err := Collective(sys, op, ranks, bytes, opt)
			if err != nil {
				return nil, err
			}
			rows = append(rows, CollectiveRow{
				Ranks: n, SizeBytes: bytes, Count: count, Type: typeName, Redop: redop,
				Algo: e.Algo, Proto: e.Proto, TimeS: e.TimeS,
				AlgBWBytesPerS: e.AlgBWBytesPerS, BusBWBytesPerS: e.BusBWBytesPerS,
				Link: e.Link, LatencyBound: e.LatencyBound,
			})
		}
	}
	return rows, nil
}

// ParseCollectiveOp accepts commcount names (all_reduce) and NCCL's (allreduce, AllReduce).
func ParseCollectiveOp(s string) (commcount.Op, error) {
	k := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "")
	for _, op := range []commcount.Op{commcount.AllReduce, commcount.AllGather, commcount.ReduceScatter,
		commcount.Broadcast, commcount.Reduce, commcount.Send, commcount.Recv} {
		if k == strings.ReplaceAll(string(op), "_", "") {
			return op, nil
		}
	}
	return "", fmt.Errorf("--op: unknown collective %q (all_reduce, all_gather, reduce_scatter, broadcast, reduce, send, recv)", s)
}

// ParseNCCLType maps partbench and nccl-tests type names to the nccl-tests name
// and the element size.
func ParseNCCLType(s string) (string, int64, error) {
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

// ParseRankCounts reads comma-separated group sizes ("8,16").
func ParseRankCounts(s string) ([]int, error) {
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

// ParseSizeRange reads "MIN:MAX" (doubling from MIN while ≤ MAX, as
// nccl-tests -f 2) or a single size.
func ParseSizeRange(s string) ([]int64, error) {
	lo, hi, isRange := strings.Cut(s, ":")
	a, err := ParseSize(lo)
	if err != nil {
		return nil, err
	}
	if !isRange {
		return []int64{a}, nil
	}
	b, err := ParseSize(hi)
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

// ParseSize reads a byte count with an optional nccl-tests suffix: K, M, G, T
// (powers of 1024), optionally followed by B or iB; a bare B means bytes.
// Its errors name --sizes; ParseBytes names another flag.
func ParseSize(s string) (int64, error) { return ParseBytes("--sizes", s) }

// ParseBytes is ParseSize for the value of flag, which its errors name.
func ParseBytes(flag, s string) (int64, error) {
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
		return 0, fmt.Errorf("%s: cannot read %q as a size (examples: 8B, 1K, 64MB, 8GB)", flag, s)
	}
	if mult > 1 && v > (1<<62)/mult {
		return 0, fmt.Errorf("%s: %q is too large", flag, s)
	}
	return v * mult, nil
}
