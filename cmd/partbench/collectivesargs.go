package main

import (
	"bytes"
	"fmt"
	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/report"
	"io"
	"os"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/fileio"
	"github.com/partbench/partbench/nccltests"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// collectivesArgs are `partbench collectives`' flags, nccl-tests'
// spelling (-b, -e, -f, -i, -o, -d, -g, -n, -w) plus --ranks, --sizes,
// --algo, --proto and the presets.
type collectivesArgs struct {
	Topology, Hardware, Collective, Redop string
	Ranks, Sizes, MinBytes, MaxBytes      string
	StepBytes, DType, Algo, Proto, Format string
	NGPUs, Iters, Warmup                  int
	StepFactor                            int64
	// Measured are nccl-tests output files to hold against the model
	// (--measured); the collective, ranks, sizes and type come from them.
	Measured []string
	// Fit fits the system's collective constants to the Measured files and
	// prints them as a [topology.collectives] section (--fit).
	Fit bool
	// NCCLTests are the nccl-tests arguments that shape no modeled figure
	// but are accepted, checked and echoed in the header (-t, -r, -c, …).
	NCCLTests ncclTestsArgs
}

// ncclTestsArgs are nccl-tests' remaining arguments. -t multiplies the rank
// count (nccl-tests runs processes × threads × GPUs ranks; the model has one
// process, so -t T -g G is T×G ranks) and -r sets the root of broadcast and
// reduce; the others change how nccl-tests measures, not what one collective
// costs on the device, so they are echoed. -C 1 (report CPU time) is refused:
// the model has no host.
type ncclTestsArgs struct {
	NThreads, Root, AggIters, RunCycles, ParallelInit, Check, Blocking, StreamNull int
	Timeout, CudaGraph, ReportCPUTime, Average, LocalRegister                      int
}

// check refuses values nccl-tests refuses or the model cannot honour,
// naming the flag.
func (a ncclTestsArgs) check() error {
	for _, c := range []struct {
		flag      string
		v, lo, hi int
	}{
		{"-t/--nthreads", a.NThreads, 1, 1 << 16}, {"-r/--root", a.Root, 0, 1 << 20}, {"-m/--agg_iters", a.AggIters, 1, 1 << 20},
		{"-N/--run_cycles", a.RunCycles, 0, 1 << 30}, {"-p/--parallel_init", a.ParallelInit, 0, 1}, {"-c/--check", a.Check, 0, 1 << 30},
		{"-z/--blocking", a.Blocking, 0, 1}, {"-y/--stream_null", a.StreamNull, 0, 1}, {"-T/--timeout", a.Timeout, 0, 1 << 30},
		{"-G/--cudagraph", a.CudaGraph, 0, 1 << 30}, {"-C/--report_cputime", a.ReportCPUTime, 0, 1}, {"-a/--average", a.Average, 0, 3},
		{"-R/--local_register", a.LocalRegister, 0, 2},
	} {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%s: must be from %d to %d (got %d)", c.flag, c.lo, c.hi, c.v)
		}
	}
	if a.ReportCPUTime == 1 {
		return fmt.Errorf("-C/--report_cputime 1: nccl-tests then reports the host's CPU time per call; the model has device time only (leave -C at 0)")
	}
	return nil
}

// echo is the header line of the arguments that shape no modeled figure.
func (a ncclTestsArgs) echo() string {
	return fmt.Sprintf("-z %d -y %d -a %d -p %d -R %d -N %d -T %d", a.Blocking, a.StreamNull, a.Average, a.ParallelInit, a.LocalRegister, a.RunCycles, a.Timeout)
}

// Write models a's sweep on the system resolve gives for a's hardware and
// topology presets and prints it in a.Format; changed says whether a flag
// was given (-g/--ngpus, --collective).
func (o *collectivesArgs) Write(w io.Writer, resolve func(hardware, topology string) (topology.System, error), changed func(flag string) bool) error {
	if len(o.Measured) > 0 {
		return o.writeCompare(w, resolve, changed)
	}
	if o.Fit {
		return fmt.Errorf("--fit: fits the model to measurements, so it needs --measured FILE (nccl-tests output)")
	}
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
	if err := o.NCCLTests.check(); err != nil {
		return err
	}
	threads := o.NCCLTests.NThreads
	if changed("ngpus") || changed("nthreads") {
		g := 1 // nccl-tests' default when only -t is given
		if changed("ngpus") {
			if o.NGPUs < 1 {
				return fmt.Errorf("-g/--ngpus: must be ≥ 1 (got %d)", o.NGPUs)
			}
			g = o.NGPUs
		}
		counts = []int{threads * g}
		if changed("ranks") {
			return fmt.Errorf("--ranks with -g/-t: -t × -g is the rank count (%d); give one or the other", threads*g)
		}
	} else {
		threads = 1
	}
	if changed("root") {
		for _, n := range counts {
			if o.NCCLTests.Root >= n {
				return fmt.Errorf("-r/--root %d: must be a rank of the group, 0 to %d", o.NCCLTests.Root, n-1)
			}
		}
	}
	rng, err := nccltests.Range{MinBytes: o.MinBytes, MaxBytes: o.MaxBytes, StepBytes: o.StepBytes, StepFactor: o.StepFactor, Sizes: o.Sizes}.Resolve(sim.ParseSize, sim.ParseSizeRange)
	if err != nil {
		return err
	}
	s := report.CollectiveSweep{Op: op, Iters: o.Iters, Warmup: o.Warmup,
		MinBytes: rng.MinBytes, MaxBytes: rng.MaxBytes, StepFactor: rng.StepFactor, StepBytes: rng.StepBytes}
	if o.Iters < 1 || o.Warmup < 0 {
		return fmt.Errorf("-n/--iters %d, -w/--warmup_iters %d: need iters ≥ 1 and warmup ≥ 0", o.Iters, o.Warmup)
	}
	if s.Sys, err = resolve(o.Hardware, o.Topology); err != nil {
		return err
	}
	opt, err := o.options()
	if err != nil {
		return err
	}
	if s.Rows, err = sim.CollectiveSweep(s.Sys, op, counts, rng.Sizes, typeName, typeSize, opt); err != nil {
		if rest, ok := strings.CutPrefix(err.Error(), "--ranks: "); ok && (changed("ngpus") || changed("nthreads")) {
			return fmt.Errorf("-g/--ngpus %d (× -t %d): %s", o.NGPUs, threads, rest) // the flags the user typed
		}
		return err
	}
	s.Redop, s.Root = nccltests.Columns(op, redop)
	if s.Root >= 0 {
		s.Root = o.NCCLTests.Root // broadcast and reduce: the root asked for
	}
	s.Threads, s.AggIters, s.Check, s.Graph, s.Echo = threads, o.NCCLTests.AggIters, o.NCCLTests.Check, o.NCCLTests.CudaGraph, o.NCCLTests.echo()
	return report.Collectives(w, o.Format, s)
}

// options are the model's options: NCCL_ALGO/NCCL_PROTO, overridden by
// --algo/--proto; an error names the flag or variable the value came from.
func (o *collectivesArgs) options() (sim.CollectiveOptions, error) {
	opt := sim.OptionsFromEnv(os.Getenv)
	if o.Algo != "" {
		opt.Algo, opt.AlgoFrom = o.Algo, "--algo"
	}
	if o.Proto != "" {
		opt.Proto, opt.ProtoFrom = o.Proto, "--proto"
	}
	return opt, opt.Validate()
}

// writeCompare reads every --measured file and prints it beside the model.
// The collective and rank count come from the file: a -g or a collective
// given as well must agree; flags that only shape a modeled sweep (sizes,
// type, reduction, iterations) are refused, the file fixes them.
func (o *collectivesArgs) writeCompare(w io.Writer, resolve func(hardware, topology string) (topology.System, error), changed func(flag string) bool) error {
	for _, f := range [][]string{{"minbytes", "-b/--minbytes"}, {"maxbytes", "-e/--maxbytes"}, {"stepfactor", "-f/--stepfactor"},
		{"stepbytes", "-i/--stepbytes"}, {"sizes", "--sizes"}, {"ranks", "--ranks"}, {"datatype", "-d/--datatype"}, {"dtype", "-d/--datatype"},
		{"op", "-o/--op"}, {"iters", "-n/--iters"}, {"warmup-iters", "-w/--warmup_iters"}, {"nthreads", "-t/--nthreads"}, {"root", "-r/--root"}} {
		if changed(f[0]) {
			return fmt.Errorf("%s with --measured: the sizes, type, reduction and iterations are the nccl-tests file's", f[1])
		}
	}
	var want commcount.Op
	if changed("collective") {
		c := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o.Collective)), "_perf")
		if c == "sendrecv" {
			c = string(commcount.Send)
		}
		op, err := sim.ParseCollectiveOp(c)
		if err != nil {
			return fmt.Errorf("collective %q: must be one of all_reduce, all_gather, reduce_scatter, broadcast, reduce, sendrecv", o.Collective)
		}
		want = op
	}
	if changed("ngpus") && o.NGPUs < 1 {
		return fmt.Errorf("-g/--ngpus: must be ≥ 1 (got %d)", o.NGPUs)
	}
	opt, err := o.options()
	if err != nil {
		return err
	}
	sys, err := resolve(o.Hardware, o.Topology)
	if err != nil {
		return err
	}
	var cs []compare.CollectiveCompare
	for _, name := range o.Measured {
		out, err := readMeasured(name)
		if err != nil {
			return err
		}
		if want != "" {
			switch {
			case out.Op == "" && out.Binary == "":
				out.Op = want // the file does not say: the user does
			case out.Op != want:
				return fmt.Errorf("%s: the file is %s (%s), the collective given is %q: leave it out with --measured, the file names it", name, out.Binary, out.Op, o.Collective)
			}
		}
		if changed("ngpus") {
			switch n := out.NRanks(); {
			case len(out.Ranks) == 0 && !out.HeaderSeen:
				out.NThread, out.NGPUs = 1, o.NGPUs // the file does not say
			case n != o.NGPUs:
				return fmt.Errorf("%s: the file ran %d ranks, -g/--ngpus is %d: leave -g out with --measured, the file gives the rank count", name, n, o.NGPUs)
			}
		}
		c, err := compare.CollectiveRun(out, sys, opt)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	var fit *sim.CollectiveFit
	if o.Fit {
		var pts []sim.MeasuredCollective
		for _, c := range cs {
			ranks := sim.GroupRanks(c.Op, c.Ranks)
			for _, r := range c.Rows {
				pts = append(pts, sim.MeasuredCollective{Op: c.Op, Ranks: ranks, Bytes: r.SizeBytes, BusBWBytesPerS: r.MeasuredBusBWBytesPerS, Opt: opt})
			}
		}
		f, err := sim.FitCollectiveTuning(sys, pts, "partbench collectives --fit: "+strings.Join(o.Measured, ", "))
		if err != nil {
			return fmt.Errorf("--fit: %w", err)
		}
		fit = &f
	}
	return report.WriteCollectivesCompare(w, o.Format, cs, fit)
}

// readMeasured parses one nccl-tests output file.
func readMeasured(name string) (*nccltests.Output, error) {
	data, err := fileio.ReadSmall(name, "--measured", MaxMeasuredBytes)
	if err != nil {
		return nil, err
	}
	return nccltests.ParseOutput(bytes.NewReader(data), name)
}

// MaxMeasuredBytes bounds one nccl-tests output file: a full sweep of every
// size on every collective is well under 1 MiB of text.
const MaxMeasuredBytes = 64 << 20
