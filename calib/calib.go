package calib

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/hoststat"
	"github.com/partbench/partbench/remote/loopback"
	"github.com/partbench/partbench/topology"
)

// Repeat counts: every figure is measured this many times (the op-time
// table: opIterationsPerRepeat iterations of every pass per repeat).
const (
	opIterationsPerRepeat = 4

	DefaultRepeats = 5
	QuickRepeats   = 3
)

// Options configure a calibration. Zero values take the defaults.
type Options struct {
	// Backend is "cpu" (this host's CPU through exec/cpu) or "cuda" (one
	// GPU through exec/cuda: runCUDA).
	Backend string
	// Device is the GPU the cuda calibration measures (0).
	Device int
	// Ranks is how many local ranks the link is measured among (default 4).
	Ranks int
	// Quick uses fewer repeats, shorter samples and fewer sizes.
	Quick bool
	// Repeats overrides the repeat count (DefaultRepeats, or QuickRepeats).
	Repeats int
	// MinSample is how long one timed sample lasts at least (2 ms; quick 0.5 ms).
	MinSample time.Duration
	// Configs name the configs whose GEMM shapes are timed (DefaultShapeConfigs).
	Configs []string
	// MaxWorkingSetBytes is the largest working set of the cache curve
	// (default 4 × the last-level cache sysfs reports, else 256 MiB).
	MaxWorkingSetBytes int64
	// GEMMFLOPBudget and GEMMWeightCapBytes bound one timed GEMM call
	// (default 2^28 FLOPs and 64 MiB of weights; quick 2^25 and 16 MiB).
	GEMMFLOPBudget     int64
	GEMMWeightCapBytes int64
	// OpConfigs name the configs whose compute ops are timed into the
	// op-time table (DefaultOpConfigs).
	OpConfigs []string
	// NewCompute makes the backend the op times are measured through
	// (nil: CPUCompute); a GPU backend's Compute times through the same
	// code, each op synchronized before its clock stops.
	NewCompute NewCompute
	// OpRanks are the numbers of concurrent workers the op times are
	// measured with, one table per count (default 1, 2 and Ranks when > 1;
	// quick: 1 and Ranks): a run's local ranks share the host's cores.
	OpRanks []int
	// LinkArgv, when set, is the command that runs this program as one rank
	// of a link measurement (LinkWorker, selected by LinkWorkerEnv): the
	// link is then timed among Ranks processes started as a run starts its
	// local ranks. Without it the ranks are goroutines of this process.
	LinkArgv []string
	// CommSizes are the payloads timed (DefaultCommSizes; quick QuickCommSizes).
	CommSizes []int64
	// Version is partbench's version, recorded in the file.
	Version string
	// Now is the clock of the recorded date (time.Now).
	Now func() time.Time
	// Progress, when set, is called after each measured step.
	Progress func(done, total int)
}

func (o *Options) defaults(h host) error {
	switch o.Backend {
	case "", configs.BackendCPU:
		o.Backend = configs.BackendCPU
	case configs.BackendCUDA:
		return o.cudaDefaults()
	default:
		return fmt.Errorf("--backend: must be cpu or cuda (got %q)", o.Backend)
	}
	if o.Ranks == 0 {
		o.Ranks = 4
	}
	if o.Ranks < 1 || o.Ranks > 64 {
		return fmt.Errorf("--nproc: must be in [1, 64] (got %d)", o.Ranks)
	}
	if err := o.sampleDefaults(500 * time.Microsecond); err != nil {
		return err
	}
	if len(o.Configs) == 0 {
		o.Configs = DefaultShapeConfigs
	}
	if o.MaxWorkingSetBytes == 0 {
		switch {
		case h.llcBytes > 0:
			o.MaxWorkingSetBytes = max(4*h.llcBytes, 16<<20)
		default:
			o.MaxWorkingSetBytes = curveTopBytes
		}
	}
	if o.MaxWorkingSetBytes < 8*curveMinBytes {
		return fmt.Errorf("max working set: must be ≥ %d bytes (got %d)", 8*curveMinBytes, o.MaxWorkingSetBytes)
	}
	if o.GEMMFLOPBudget == 0 {
		o.GEMMFLOPBudget = 1 << 28
		if o.Quick {
			o.GEMMFLOPBudget = 1 << 25
		}
	}
	if o.GEMMWeightCapBytes == 0 {
		o.GEMMWeightCapBytes = 64 << 20
		if o.Quick {
			o.GEMMWeightCapBytes = 16 << 20
		}
	}
	if len(o.CommSizes) == 0 {
		o.CommSizes = DefaultCommSizes
		if o.Quick {
			o.CommSizes = QuickCommSizes
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(o.OpConfigs) == 0 {
		o.OpConfigs = DefaultOpConfigs
	}
	if len(o.OpRanks) == 0 {
		o.OpRanks = []int{1}
		if o.Ranks > 2 && !o.Quick {
			o.OpRanks = append(o.OpRanks, 2)
		}
		if o.Ranks > 1 {
			o.OpRanks = append(o.OpRanks, o.Ranks)
		}
	}
	seen := map[int]bool{}
	for _, n := range o.OpRanks {
		if n < 1 || n > 64 || seen[n] {
			return fmt.Errorf("--op-ranks: each must be in [1, 64] and given once (got %v)", o.OpRanks)
		}
		seen[n] = true
	}
	return nil
}

// Run measures this machine and returns the calibration. ctx cancels it
// between samples.
func Run(ctx context.Context, o Options) (*configs.Calibration, error) {
	h, err := readHost()
	if err != nil {
		return nil, err
	}
	if err := o.defaults(h); err != nil {
		return nil, err
	}
	if o.Backend == configs.BackendCUDA {
		return runCUDA(ctx, o, h)
	}
	shapes, err := programShapes(o.Configs)
	if err != nil {
		return nil, err
	}
	for i := range shapes {
		shapes[i].clip(o.GEMMFLOPBudget, o.GEMMWeightCapBytes)
	}
	sizes := curveSizes(o.MaxWorkingSetBytes)
	opPlanList, err := opPlans(o.OpConfigs)
	if err != nil {
		return nil, fmt.Errorf("op times: %w", err)
	}
	// The link's groups at o.Ranks: all_reduce and sendrecv at the sweep,
	// the all_gather also at the Programs' payloads (allgather.go).
	gathers := programGathers(opPlanList)
	groups := linkGroups(o.Ranks, o.Quick, o.CommSizes, gathers)

	total := o.Repeats*len(sizes) + len(shapes) + 1 + samplesCount(groups) + len(o.OpRanks)*opRankCount(opPlanList) + 1 + 1
	done := 0
	step := func() error {
		done++
		if o.Progress != nil {
			o.Progress(done, total)
		}
		return ctx.Err()
	}

	hostStart, hostOK := hoststat.Read()
	cal := &configs.Calibration{
		Spread:   map[string]configs.Spread{},
		Comments: map[string]string{},
		Info: configs.CalibrationInfo{Host: h.name, CPU: h.cpu, Cores: h.cores, Backend: o.Backend,
			Date: o.Now().UTC().Format(time.RFC3339), Version: o.Version, Ranks: o.Ranks, Repeats: o.Repeats, Quick: o.Quick},
	}

	// 1. The cache curve; its largest working sets give the streaming bandwidth.
	mem, err := measureCache(o, sizes, cal, step)
	if err != nil {
		return nil, err
	}
	// 2. GEMMs over the Programs' shapes; F fitted per repeat.
	flops, err := measureGEMM(o, shapes, mem, cal, step)
	if err != nil {
		return nil, err
	}

	// 3. Per-op overhead through exec/cpu.
	launch, err := execOverhead(ctx, o.Repeats, o.MinSample)
	if err != nil {
		return nil, err
	}
	if err := step(); err != nil {
		return nil, err
	}
	cal.Spread["kernel_launch_s"] = spreadOf(launch)
	// 3b. The executor's own time between two ops (opgap.go), an op-time entry.
	gaps, err := measureOpGap(ctx, o.Repeats, o.MinSample)
	if err != nil {
		return nil, err
	}
	gapEntry, haveGap := opGapEntry(gaps)

	// 4. The link among o.Ranks local ranks.
	link := topology.Link{}
	if o.Ranks > 1 {
		var linkErr error
		link, linkErr = measureLink(ctx, o, groups, cal, step)
		if linkErr != nil {
			return nil, linkErr
		}
	}

	cal.Hardware = topology.GPU{
		Name:          "cpu:" + h.cpu,
		FP32FLOPsPerS: flops, FP16FLOPsPerS: flops, BF16FLOPsPerS: flops,
		HBMBytes: h.memBytes, HBMReservedBytes: min(h.memBytes-h.memAvail, h.memBytes-1), HBMBytesPerS: mem.streamBytesPerS,
		L2Bytes: int64(mem.l2Bytes), L2UsableFraction: 1, L2BytesPerS: mem.l2BytesPerS,
		SMs: h.cores, SharedMemPerSM: h.l1dBytes,
		KernelLaunchS:     spreadOf(launch).Median,
		ComputeEfficiency: 1, HBMEfficiency: 1,
	}
	cal.Topology = topology.Topology{Name: fmt.Sprintf("cpu-loopback-%d", o.Ranks), Nodes: 1, GPUsPerNode: o.Ranks, Intra: link}
	comment(cal, h, o, len(shapes))
	if err := cal.Validate(); err != nil {
		return nil, fmt.Errorf("calibration: measured figures are not a valid profile: %w", err)
	}

	// The core-wait loops' first launch at each count (corewait.go), here
	// before the op times; their second, after them, adds its repeats to
	// this one's. Five repeats of one launch leave the wait after a
	// decode's burst anywhere in 1.8–5.8 µs on the project's 2-core VM
	// (4 ranks), and a 4-rank config's modeled TPOT ≈ 70 µs per µs of
	// it; the repeats of separate short launches narrow that, where one
	// launch of more repeats meets another state of the host
	// (docs/measurements/cpu-calibration.md, (twenty-eighth)).
	firstWait := map[int]*coreWaitTimes{}
	if len(o.LinkArgv) > 0 {
		for _, n := range coreWaitCounts(o, h.cores) {
			if firstWait[n], err = measureCoreWaitTimes(ctx, o, n, h.cores); err != nil {
				return nil, err
			}
		}
	}

	// 5. The op-time table: every compute op kind of the test configs'
	// Programs at their shapes, timed in sequence as a run executes them,
	// with 1…N ranks sharing the host; every collective and transfer from
	// the link samples.
	// More than one rank: n process ranks at once where this program can
	// start them (opprocs.go), as a run's local ranks share the host; one
	// rank first, whose stretch (wall over CPU time: the host's other load)
	// the process ranks' times are brought back to.
	alone := 0.0
	turnHopsAt := map[int][]turnHopBin{} // the hand-offs between turns, by rank count (turnhop.go)
	opRanks := slices.Clone(o.OpRanks)
	slices.Sort(opRanks)
	for _, n := range opRanks {
		if n > 1 && len(o.LinkArgv) > 0 && o.NewCompute == nil {
			ts, stretches, err := measureOpTimesProcs(ctx, o.LinkArgv, n, o.OpConfigs, o.Repeats, OpBlockMin, false)
			if err != nil {
				return nil, err
			}
			cal.OpTimes = append(cal.OpTimes, ts...)
			cal.Info.OpTimeProcesses = true
			note(cal, "op times at %d process ranks at once, each op by its time on a core (the lesser of its wall and CPU time: the waits for a core are the shared-core stretch sim adds): the ranks ran at a stretch (wall over CPU time) of %.3g (median over ranks; %.3g–%.3g), one rank alone at %.3g",
				n, medianOf(stretches), slices.Min(stretches), slices.Max(stretches), alone)
			if n > h.cores {
				// Above the cores, the same ranks again taking turns: a
				// pipeline's stages compute one at a time.
				tt, _, tm, err := measureOpTimesProcsHops(ctx, o.LinkArgv, n, o.OpConfigs, opIterationsPerRepeat*o.Repeats, 0, true)
				if err != nil {
					return nil, err
				}
				if len(tm.hops) > 0 {
					note(cal, "hand-off between turns at %d process ranks, from a rank's Send call's start to the next rank's return from its receive, after a pass of real ops (turnhop.go): %s; %s", n, describeTurnHops(tm.hops), describeTurnOrder(tm.order))
					turnHopsAt[n] = tm.hops
				}
				if len(tm.off) > 0 { // a turn's time off its core (turnoff.go)
					note(cal, "time off the core per turn at %d process ranks (the turn's wall time less its thread's CPU time, turnoff.go): %s", n, describeTurnOffs(tm.off))
					cal.OpTimes = append(cal.OpTimes, turnOffEntries(tm.off, n, h.cores)...)
				}
				cal.OpTimes = append(cal.OpTimes, tt...)
				note(cal, "op times at %d process ranks taking turns (a token passed round, one pass each turn), each op by its time on a core: %s", n, turnsOverAtOnce(tt, ts))
			}
			for range opRankCount(opPlanList) {
				if err := step(); err != nil {
					return nil, err
				}
			}
			continue
		}
		var stretch *float64
		if n == 1 {
			stretch = &alone
		}
		ts, err := measureOpTimesBlocks(ctx, opPlanList, n, opIterationsPerRepeat*o.Repeats, blockOpts{stretch: stretch}, o.NewCompute, nil, step)
		if err != nil {
			return nil, err
		}
		cal.OpTimes = append(cal.OpTimes, ts...)
	}
	cal.OpTimes = append(cal.OpTimes, commOpTimes(cal.Comm, o.Ranks, o.Repeats)...)
	if haveGap {
		cal.OpTimes = append(cal.OpTimes, gapEntry)
		note(cal, "op gap: %.3g s per op between the op timers of a run (single-tiny's decode Program through the executor as a run times it; median over %d repeats, %.3g–%.3g s)", gapEntry.TimeS, gapEntry.Samples, gapEntry.TimeMinS, gapEntry.TimeMaxS)
	}
	// The other placements' communication: the link again among n process
	// ranks for every other count of --op-ranks above one.
	for _, n := range o.OpRanks {
		if n < 2 || n == o.Ranks || len(o.LinkArgv) == 0 {
			continue
		}
		gs := linkGroups(n, o.Quick, o.CommSizes, gathers)
		var times [][][]float64
		if n <= h.cores {
			// Bound a CPU each: the fastest of several launches
			// (linklaunches.go).
			var launches string
			var two []string
			if times, launches, two, err = boundLinkTimesSized(ctx, o.LinkArgv, n, groupsOf(gs), sizesOf(gs), o.Repeats, o.MinSample); err != nil {
				return nil, err
			}
			note(cal, "link at %d process ranks bound to a CPU each, in %d launches, each group and size from the launch of the lowest median (launch medians: %s)", n, linkLaunchesBound, launches)
			if len(two) > 0 {
				cal.Info.Warnings = append(cal.Info.Warnings, fmt.Sprintf("the link at %d process ranks took two states while calibrating (launch medians %s; more than %.1f× apart): the profile prices the fastest launch, and a run may meet the slower — calibrate with --rounds 3 and read each run's link probe note", n, strings.Join(two, "; "), LinkStatesFactor))
			}
		} else if times, err = measureLinkProcsSized(ctx, o.LinkArgv, n, groupsOf(gs), sizesOf(gs), o.Repeats, o.MinSample); err != nil {
			return nil, err
		}
		cal.OpTimes = append(cal.OpTimes, commOpTimes(commSamples(gs, times), n, o.Repeats)...)
	}
	// The collectives in place, beyond back to back, at every placement
	// of no more ranks than cores (inplace.go).
	if len(o.LinkArgv) > 0 && o.NewCompute == nil {
		if err := addInPlace(ctx, o, opPlanList, h.cores, cal); err != nil {
			return nil, err
		}
	}
	// The sender's own time in its Send calls, at every placement the
	// link is measured at (sendcall.go).
	if len(o.LinkArgv) > 0 {
		seen := map[int]bool{}
		for _, n := range append([]int{o.Ranks}, o.OpRanks...) {
			if n < 2 || seen[n] {
				continue
			}
			seen[n] = true
			if err := measureSendCall(ctx, o, n, h.cores, cal); err != nil {
				return nil, err
			}
		}
	}
	// The partners' scheduling delay of a collective at every placement of
	// more ranks than cores (corewait.go), among process ranks only.
	if len(o.LinkArgv) > 0 {
		for _, n := range coreWaitCounts(o, h.cores) {
			m, err := measureCoreWaitTimes(ctx, o, n, h.cores)
			if err != nil {
				return nil, err
			}
			if first := firstWait[n]; first != nil {
				if err := first.pool(m); err != nil {
					return nil, err
				}
				m = first
			}
			if err := addCoreWait(cal, m, n, h.cores); err != nil {
				return nil, err
			}
		}
		// How far the later of data-parallel replicas ends above one
		// (replicaspread.go).
		for _, n := range replicaSpreadCounts(o, h.cores) {
			if err := measureReplicaSpread(ctx, o, n, h.cores, cal); err != nil {
				return nil, err
			}
		}
	}
	// The receive wait between turns: the hand-offs less the one-way
	// time of a small message at the same count (turnhop.go).
	for _, n := range slices.Sorted(maps.Keys(turnHopsAt)) {
		es := recvWaitTurnsEntries(turnHopsAt[n], smallSendS(cal.OpTimes, n), n, h.cores, o.Repeats)
		cal.OpTimes = append(cal.OpTimes, es...)
	}
	if err := configs.ValidateOpTimes("op_time", cal.OpTimes); err != nil {
		return nil, fmt.Errorf("calibration: measured op times: %w", err)
	}

	// 6. The profile held against the CPU backend, op kind by op kind.
	if cal.Ops, err = CheckOps(ctx, cal, OpsConfig, o.Repeats); err != nil {
		return nil, err
	}
	if err := step(); err != nil {
		return nil, err
	}

	// 7. The remote server's per-request overhead over loopback gRPC.
	if err := measureRemote(ctx, o, cal); err != nil {
		return nil, err
	}
	if err := step(); err != nil {
		return nil, err
	}
	judgeCalibration(cal, hostWindow(cal, hostStart, hostOK))
	return cal, nil
}

// BusyOthersFraction is the share of the host's CPU time other processes
// may take while a calibration runs (its own rank processes are its own),
// BusyLoadFactor the load average per core that stands in for it where the
// host does not say the calibration's own CPU time, and OpCheckFactor how
// far a calibration's own op check may sit from 1 (either way): beyond any
// of them the calibration is flagged — the figures describe the machine's
// load (or a model that misses), and a run measured at another load will
// not agree with them.
const (
	BusyOthersFraction = 0.25
	BusyLoadFactor     = 1.5
	OpCheckFactor      = 1.5
)

// judgeCalibration adds a warning when the machine was busy while it was
// measured — other processes took more than BusyOthersFraction of the
// host's CPU time over w, or, where w does not know the calibration's own
// share (or was not read at all: the zero Window), the load average was above
// BusyLoadFactor per core — or when the calibrated model misses the CPU
// backend's op times by more than OpCheckFactor. The load average alone
// cannot tell: a calibration's own process ranks raise it (16 of them took
// a 2-core host's from 0.42 to 4.58).
func judgeCalibration(cal *configs.Calibration, w hoststat.Window) {
	if others, ok := w.Others(); ok {
		if others > BusyOthersFraction {
			cal.Info.Warnings = append(cal.Info.Warnings, fmt.Sprintf("the machine was busy: other processes took %.0f %% of the host's CPU time while calibrating (more than %.0f %%; the calibration itself %.0f %%, 1-minute load %.2f → %.2f on %d CPUs); these figures include that load — calibrate again when the machine is quiet",
				100*others, 100*BusyOthersFraction, 100*w.OwnFraction, w.LoadStart, w.LoadEnd, w.CPUs))
		}
	} else if la := cal.Info.LoadAverage; len(la) == 2 && cal.Info.Cores > 0 {
		if peak := max(la[0], la[1]); peak > BusyLoadFactor*float64(cal.Info.Cores) {
			cal.Info.Warnings = append(cal.Info.Warnings, fmt.Sprintf("the machine was busy: 1-minute load average %.2f at the start and %.2f at the end on %d cores (more than %.1f per core); these figures include that load — calibrate again when the machine is quiet", la[0], la[1], cal.Info.Cores, BusyLoadFactor))
		}
	}
	if w, ok := opCheckWarning(cal); ok {
		cal.Info.Warnings = append(cal.Info.Warnings, w)
	}
}

// opCheckWarning is the warning judgeCalibration gives a calibration whose
// model misses its own op check by more than OpCheckFactor (false: none).
func opCheckWarning(cal *configs.Calibration) (string, bool) {
	var meas, model float64
	for _, o := range cal.Ops {
		meas, model = meas+o.MeasuredS, model+o.ModelS
	}
	if meas > 0 && model > 0 {
		if r := model / meas; r > OpCheckFactor || r < 1/OpCheckFactor {
			return fmt.Sprintf("the calibrated model is %.2f× the CPU backend's measured op time (%s), beyond %.1f× either way: the machine's load changed while measuring, or the model misses here", r, OpsConfig, OpCheckFactor), true
		}
	}
	return "", false
}

// hostWindow states the host's load and CPU time over the calibration
// (from start, when ok) in cal: the load average at the start and the end,
// a note in words, and a warning where the hypervisor took more than
// hoststat.StolenFlagFraction of the CPUs' time. It returns the window,
// the zero Window where either end could not be read.
func hostWindow(cal *configs.Calibration, start hoststat.Sample, ok bool) hoststat.Window {
	end, endOK := hoststat.Read()
	if !ok || !endOK {
		return hoststat.Window{}
	}
	w := hoststat.Between(start, end)
	stateHost(cal, w)
	return w
}

// stateHost puts the host's window over the calibration into cal.
func stateHost(cal *configs.Calibration, w hoststat.Window) {
	cal.Info.LoadAverage = []float64{w.LoadStart, w.LoadEnd}
	if others, ok := w.Others(); ok {
		note(cal, "host over the calibration: %s; the calibration and its rank processes %.0f %%, other processes %.0f %%", w, 100*w.OwnFraction, 100*others)
	} else {
		note(cal, "host over the calibration: %s", w)
	}
	if w.Stolen() {
		cal.Info.Warnings = append(cal.Info.Warnings, fmt.Sprintf("the hypervisor gave %.1f %% of the host's CPU time to other guests while calibrating; the figures include those waits — calibrate again when the host is quieter", 100*w.StealFraction))
	}
}

// remoteSamples is the stateful decode requests timed per repeat.
const (
	remoteSamples      = 60
	remoteQuickSamples = 15
)

// measureRemote times stateful decode requests through partbench's remote
// server in this process over loopback gRPC (loopback.MeasureRequestOverhead):
// the median of each repeat gives the spread, the median of those the
// figure model --dry-run --remote-link prices every request with.
func measureRemote(ctx context.Context, o Options, cal *configs.Calibration) error {
	n := remoteSamples
	if o.Quick {
		n = remoteQuickSamples
	}
	meds := make([]float64, o.Repeats)
	for r := range meds {
		xs, err := loopback.MeasureRequestOverhead(ctx, "grpc", n)
		if err != nil {
			return fmt.Errorf("remote request overhead: %w", err)
		}
		meds[r] = medianOf(xs)
	}
	sp := spreadOf(meds)
	cal.Spread["remote_request_overhead_s"] = sp
	cal.Remote = &configs.RemoteCalibration{RequestOverheadS: max(sp.Median, 0), Transport: "grpc", Config: loopback.OverheadConfig, Samples: n * o.Repeats}
	cal.Comments["remote"] = fmt.Sprintf("measured: stateful decode steps of %s through partbench's server over loopback gRPC: wall − execute − payload/bandwidth − 2 × latency (loopback link), median", loopback.OverheadConfig)
	cal.Comments["spread.remote_request_overhead_s"] = "each repeat's median"
	return nil
}

// note adds a caveat to the calibration's notes.
func note(cal *configs.Calibration, format string, a ...any) {
	cal.Info.Notes = append(cal.Info.Notes, fmt.Sprintf(format, a...))
}

// measureCache reads the working-set curve once per repeat and fills the
// memory figures' spreads and the curve samples; it returns the medians.
func measureCache(o Options, sizes []int64, cal *configs.Calibration, step func() error) (memFigures, error) {
	big := fillBuffer(sizes[len(sizes)-1])
	curve := make([]curveRepeat, o.Repeats)
	for r := range curve {
		curve[r] = make(curveRepeat, len(sizes))
		for i, s := range sizes {
			curve[r][i] = reuseBandwidth(big[:s/4], o.MinSample)
			if err := step(); err != nil {
				return memFigures{}, err
			}
		}
	}
	mem := cacheSpreads(sizes, curve, cal)
	if n := len(cal.Cache); cal.Cache[n-streamPoints].BytesPerSMedian > 1.1*cal.Cache[n-1].BytesPerSMedian {
		note(cal, "the cache curve has not flattened over its %d largest working sets (%d to %d B): hbm_bytes_per_s may count cache hits", streamPoints, sizes[n-streamPoints], sizes[n-1])
	}
	return mem, nil
}

// measureGEMM times every shape once per repeat, fits F per repeat and
// fills the GEMM samples and the spread; it returns the median F.
func measureGEMM(o Options, shapes []gemmShape, mem memFigures, cal *configs.Calibration, step func() error) (float64, error) {
	g, release, err := cpuGEMM()
	if err != nil {
		return 0, err
	}
	defer release()
	times := make([][]float64, len(shapes)) // [shape][repeat]
	for i, s := range shapes {
		times[i] = timeGEMM(g, s, o.Repeats, o.MinSample)
		if err := step(); err != nil {
			return 0, err
		}
	}
	var fs []float64
	for r := 0; r < o.Repeats; r++ {
		t := make([]float64, len(shapes))
		for i := range shapes {
			t[i] = times[i][r]
		}
		f, ok := fitFLOPs(shapes, t, mem)
		if !ok {
			var rates []float64
			for i, s := range shapes {
				rates = append(rates, s.flops()/t[i])
			}
			f = medianOf(rates)
			note(cal, "repeat %d: the memory terms alone reach the measured GEMM times; fp32_flops_per_s is the median per-shape rate instead of a fit", r)
		}
		fs = append(fs, f)
	}
	flops := medianOf(fs)
	cal.Spread["fp32_flops_per_s"] = spreadOf(fs)
	for i, s := range shapes {
		sp := spreadOf(times[i])
		cal.GEMM = append(cal.GEMM, configs.GEMMSample{Source: s.source, M: s.m, N: s.n, K: s.k, MeasuredM: s.mm, MeasuredN: s.mn,
			FLOPs: int64(s.flops()), TimeMinS: sp.Min, TimeMedianS: sp.Median, TimeMaxS: sp.Max,
			FLOPsPerS: s.flops() / sp.Median, ModelTimeS: rooflineS(s, flops, mem)})
	}
	return flops, nil
}

// commGroups are the group sizes all_reduce is timed over: every rank, and
// also pairs when there are more than two (the tensor-parallel groups of
// the tiny configs): with an even count every pair {0, 1}, {2, 3}, … at
// once, as a 4-rank run's TP pairs overlap (opAllReducePairs), else the
// pair {0, 1} with the others idle (not in quick mode).
func commGroups(n int, quick bool) []commGroup {
	if n < 2 {
		return nil
	}
	all := everyRank(n)
	gs := []commGroup{{opAllReduce, all}}
	switch {
	case n > 2 && n%2 == 0:
		gs = append(gs, commGroup{opAllReducePairs, all})
	case n > 2 && !quick:
		gs = append(gs, commGroup{opAllReduce, []int{0, 1}})
	}
	return append(gs, commGroup{opSendRecv, []int{0, 1}})
}

type commGroup struct {
	op    string
	ranks []int
}

// measureLink times every group at every size, fits α and β per repeat, and
// fills cal's samples and spreads. The link it returns has the medians.
func measureLink(ctx context.Context, o Options, groups []sizedGroup, cal *configs.Calibration, step func() error) (topology.Link, error) {
	var samples []linkSample
	how := "in one process"
	if len(o.LinkArgv) > 0 {
		how = "as processes"
		times, err := measureLinkProcsSized(ctx, o.LinkArgv, o.Ranks, groupsOf(groups), sizesOf(groups), o.Repeats, o.MinSample)
		if err != nil {
			return topology.Link{}, err
		}
		for gi, g := range groups {
			for si, s := range g.sizes {
				n := sampleRanks(g.op, g.ranks)
				if len(times[gi][si]) != o.Repeats {
					return topology.Link{}, fmt.Errorf("communication: %s over %v, %d B: %d times from rank 0, want %d", g.op, g.ranks, s, len(times[gi][si]), o.Repeats)
				}
				samples = append(samples, linkSample{g.op, n, s, times[gi][si]})
				if err := step(); err != nil {
					return topology.Link{}, err
				}
			}
		}
		groups = nil // measured
	}
	var w *world
	if len(groups) > 0 {
		var err error
		if w, err = newWorld(ctx, o.Ranks); err != nil {
			return topology.Link{}, err
		}
		defer w.close()
	}
	for _, g := range groups {
		b, err := w.bench(ctx, g.op, g.ranks)
		if err != nil {
			return topology.Link{}, err
		}
		for _, s := range g.sizes {
			ts, err := b.time(ctx, w, s, o.Repeats, o.MinSample)
			if err != nil {
				return topology.Link{}, fmt.Errorf("communication: %s of %d B: %w", g.op, s, err)
			}
			n := sampleRanks(g.op, g.ranks)
			samples = append(samples, linkSample{g.op, n, s, ts})
			if err := step(); err != nil {
				return topology.Link{}, err
			}
		}
	}
	var alphas, betas []float64
	for r := 0; r < o.Repeats; r++ {
		a, b, err := fitLink(linkFitPoints(samples, r))
		if err != nil {
			return topology.Link{}, err
		}
		alphas, betas = append(alphas, a), append(betas, b)
	}
	cal.Spread["link_latency_s"] = spreadOf(alphas)
	cal.Spread["link_bytes_per_s"] = spreadOf(betas)
	link := linkOf(fmt.Sprintf("TCP over loopback (exec/tcpcomm), %d ranks %s", o.Ranks, how), medianOf(alphas), medianOf(betas))

	// The raw line through the sendrecv medians, for comparison with the fit.
	var xs, ys []float64
	for _, s := range samples {
		sp := spreadOf(s.times)
		e, err := modelComm(commPoint{s.op, s.ranks, s.bytes, sp.Median}, link)
		if err != nil {
			return topology.Link{}, err
		}
		cal.Comm = append(cal.Comm, configs.CommSample{Op: s.op, Ranks: s.ranks, Bytes: s.bytes,
			TimeMinS: sp.Min, TimeMedianS: sp.Median, TimeMaxS: sp.Max, ModelTimeS: e.TimeS, Algo: e.Algo, Proto: e.Proto})
		if s.op == opSendRecv {
			xs, ys = append(xs, float64(s.bytes)), append(ys, sp.Median)
		}
	}
	if len(xs) >= 2 {
		a, b := lineFit(xs, ys)
		bw := math.Inf(1)
		if b > 0 {
			bw = 1 / b
		}
		note(cal, "sendrecv one-way time, line through the medians (least relative squares): %.3g s + bytes / %.3g B/s (no protocol model)", a, bw)
	}
	return link, nil
}

// sampleDefaults fills the repeats and the shortest sample where unset
// (--quick: QuickRepeats and quickSample, else DefaultRepeats and 2 ms),
// for both backends, and refuses fewer than one repeat.
func (o *Options) sampleDefaults(quickSample time.Duration) error {
	if o.Repeats == 0 {
		o.Repeats = DefaultRepeats
		if o.Quick {
			o.Repeats = QuickRepeats
		}
	}
	if o.Repeats < 1 {
		return fmt.Errorf("repeats: must be ≥ 1 (got %d)", o.Repeats)
	}
	if o.MinSample == 0 {
		o.MinSample = 2 * time.Millisecond
		if o.Quick {
			o.MinSample = quickSample
		}
	}
	return nil
}
