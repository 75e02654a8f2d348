package report

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/nccltests"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// CollectivesArgs are `partbench collectives`' flags, nccl-tests'
// spelling (-b, -e, -f, -i, -o, -d, -g, -n, -w) plus --ranks, --sizes,
// --algo, --proto and the presets.
type CollectivesArgs struct {
	Topology, Hardware, Collective, Redop string
	Ranks, Sizes, MinBytes, MaxBytes      string
	StepBytes, DType, Algo, Proto, Format string
	NGPUs, Iters, Warmup                  int
	StepFactor                            int64
}

// Write models a's sweep on the system resolve gives for a's hardware and
// topology presets and prints it in a.Format; changed says whether a flag
// was given (-g/--ngpus, --collective).
func (o *CollectivesArgs) Write(w io.Writer, resolve func(hardware, topology string) (topology.System, error), changed func(flag string) bool) error {
	collective, redop := o.Collective, o.Redop
	if _, err := sim.ParseCollectiveOp(redop); err == nil { // the old --op all_reduce
		if changed("collective") {
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
	typeName, typeSize, err := sim.ParseNCCLType(o.DType)
	if err != nil {
		return fmt.Errorf("-d/--datatype: %w", err)
	}
	counts, err := sim.ParseRankCounts(o.Ranks)
	if err != nil {
		return err
	}
	if changed("ngpus") {
		if o.NGPUs < 1 {
			return fmt.Errorf("-g/--ngpus: must be ≥ 1 (got %d)", o.NGPUs)
		}
		counts = []int{o.NGPUs}
	}
	rng, err := nccltests.Range{MinBytes: o.MinBytes, MaxBytes: o.MaxBytes, StepBytes: o.StepBytes, StepFactor: o.StepFactor, Sizes: o.Sizes}.Resolve(sim.ParseSize, sim.ParseSizeRange)
	if err != nil {
		return err
	}
	s := CollectiveSweep{Op: op, Iters: o.Iters, Warmup: o.Warmup,
		MinBytes: rng.MinBytes, MaxBytes: rng.MaxBytes, StepFactor: rng.StepFactor, StepBytes: rng.StepBytes}
	if o.Iters < 1 || o.Warmup < 0 {
		return fmt.Errorf("-n/--iters %d, -w/--warmup_iters %d: need iters ≥ 1 and warmup ≥ 0", o.Iters, o.Warmup)
	}
	if s.Sys, err = resolve(o.Hardware, o.Topology); err != nil {
		return err
	}
	opt := sim.OptionsFromEnv(os.Getenv)
	if o.Algo != "" {
		opt.Algo = o.Algo
	}
	if o.Proto != "" {
		opt.Proto = o.Proto
	}
	if err := opt.Validate(); err != nil {
		return err
	}
	if s.Rows, err = sim.CollectiveSweep(s.Sys, op, counts, rng.Sizes, typeName, typeSize, opt); err != nil {
		return err
	}
	s.Redop, s.Root = nccltests.Columns(op, redop)
	return Collectives(w, o.Format, s)
}
