package nccltests

import (
	"fmt"
	"strings"

	"github.com/partbench/partbench/commcount"
)

// MaxSizes bounds the size list a linear step can produce.
const MaxSizes = 4096

// Sizes is the sizes nccl-tests runs for -b minBytes -e maxBytes with -f
// stepFactor (multiplicative, > 1) or -i stepBytes (additive, used when
// stepFactor is 1): starting at minBytes, while ≤ maxBytes.
func Sizes(minBytes, maxBytes int64, stepFactor, stepBytes int64) ([]int64, error) {
	switch {
	case minBytes < 0 || maxBytes < minBytes:
		return nil, fmt.Errorf("-b/--minbytes %d, -e/--maxbytes %d: need 0 ≤ minbytes ≤ maxbytes", minBytes, maxBytes)
	case stepFactor < 1:
		return nil, fmt.Errorf("-f/--stepfactor: must be ≥ 1 (got %d)", stepFactor)
	case stepFactor == 1 && stepBytes < 1 && maxBytes > minBytes:
		return nil, fmt.Errorf("-i/--stepbytes: must be ≥ 1 with -f 1 (got %d)", stepBytes)
	case stepFactor > 1 && minBytes == 0:
		return nil, fmt.Errorf("-b/--minbytes 0: a -f %d progression cannot start at 0 B", stepFactor)
	}
	var out []int64
	for v := minBytes; v <= maxBytes; {
		out = append(out, v)
		if len(out) > MaxSizes {
			return nil, fmt.Errorf("-b/-e/-i: more than %d sizes", MaxSizes)
		}
		if stepFactor > 1 {
			if v > maxBytes/stepFactor {
				break
			}
			v *= stepFactor
		} else {
			if stepBytes < 1 {
				break
			}
			v += stepBytes
		}
	}
	return out, nil
}

// Redops are the reduction ops -o accepts (nccl-tests' names).
var Redops = []string{"sum", "prod", "min", "max", "avg"}

// Redop checks -o. The model's time does not depend on it (NCCL reduces
// at line rate for every op); it is printed in the redop column.
func Redop(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, r := range Redops {
		if s == r {
			return s, nil
		}
	}
	return "", fmt.Errorf("-o/--op: must be one of %s (got %q); the collective is the argument (all_reduce, all_gather, …)", strings.Join(Redops, ", "), s)
}

// Columns are the redop and root columns nccl-tests prints for op: ops
// without a reduction print "none", ops without a root print -1.
func Columns(op commcount.Op, redop string) (string, int) {
	switch op {
	case commcount.AllReduce, commcount.ReduceScatter:
		return redop, -1
	case commcount.Reduce:
		return redop, 0
	case commcount.Broadcast:
		return "none", 0
	}
	return "none", -1
}

// Binary is nccl-tests' program name for op (all_reduce_perf).
func Binary(op commcount.Op) string {
	if op == commcount.Send || op == commcount.Recv {
		return "sendrecv_perf"
	}
	return string(op) + "_perf"
}

// Range is the size arguments as given: -b, -e, -i as strings with
// nccl-tests suffixes, -f as a number, or partbench's older MIN:MAX form.
type Range struct {
	MinBytes, MaxBytes, StepBytes string
	StepFactor                    int64
	// Sizes, when set, is "MIN:MAX" (doubling) or one size, and wins.
	Sizes string
}

// Resolved is a Range read: the sizes, and the numbers nccl-tests' header
// prints.
type Resolved struct {
	Sizes                                     []int64
	MinBytes, MaxBytes, StepFactor, StepBytes int64
}

// Resolve reads r with parse (sim.ParseSize: 1K = 1024).
func (r Range) Resolve(parse func(string) (int64, error), parseRange func(string) ([]int64, error)) (Resolved, error) {
	var out Resolved
	if r.Sizes != "" {
		sizes, err := parseRange(r.Sizes)
		if err != nil {
			return out, err
		}
		return Resolved{Sizes: sizes, MinBytes: sizes[0], MaxBytes: sizes[len(sizes)-1], StepFactor: 2}, nil
	}
	out.StepFactor = r.StepFactor
	for _, p := range []struct {
		flag, in string
		out      *int64
	}{{"-b/--minbytes", r.MinBytes, &out.MinBytes}, {"-e/--maxbytes", r.MaxBytes, &out.MaxBytes}, {"-i/--stepbytes", r.StepBytes, &out.StepBytes}} {
		v, err := parse(p.in)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p.flag, err)
		}
		*p.out = v
	}
	var err error
	out.Sizes, err = Sizes(out.MinBytes, out.MaxBytes, out.StepFactor, out.StepBytes)
	return out, err
}
