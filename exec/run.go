package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/gcpace"
	"github.com/partbench/partbench/hoststat"
	"github.com/partbench/partbench/partition"
)

// RunOptions configures one rank's run.
type RunOptions struct {
	// Plan is what every rank runs, built once by the caller from the config.
	Plan *partition.Plan
	Env  launch.Env
	// Backend names the compute backend in results ("cpu", "cuda").
	Backend string
	// NewCompute and NewComm make this rank's backends, the Compute first:
	// a communicator may queue on the Compute (a GPU stream). NewComm may use
	// the session to exchange addresses or NCCL unique ids.
	NewCompute func(plan *partition.Plan, rank int) (Compute, error)
	NewComm    func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c Compute) (Comm, error)
	// JoinTimeout bounds the rendezvous (0: its default).
	JoinTimeout time.Duration
	// Progress, when set, is called after each iteration (rank 0 only).
	Progress func(done, total int)
	// TraceDecodeSteps > 0 records every op of the last iteration's prefill
	// and first TraceDecodeSteps decode steps as spans, for a trace.
	TraceDecodeSteps int
	// LinkProbeCalls > 0 times that many calls of each of the rank's
	// groups' collectives back to back after the measured iterations
	// (RankResult.LinkProbes; 0: none).
	LinkProbeCalls int
	// AfterBarrier, when set, is called on each rank as it leaves an
	// iteration's barrier, before the iteration's start is read (it = the
	// iteration's index, warm-up included): a test's way to start a rank
	// late.
	AfterBarrier func(rank, it int)
	// PaceGC paces the Go collector once the rank is set up
	// (gcpace.Apply(gcpace.Headroom): a collection per about 64 MiB
	// allocated beyond the live heap), so that a rank whose live heap is a
	// few MiB — the tiny test configs' — is not collected every hundred
	// milliseconds while it is measured: on the project's 2-core VM a
	// tp2-tiny rank collected three to four times in its first 0.31 s, and
	// a collection on a rank's CPU holds its partner's collectives up to
	// 100 µs (docs/measurements/cpu-calibration.md, (thirty-first)). The
	// note is RankResult.GC. A rank with a large live heap keeps the
	// default pace (gcpace.Percent).
	PaceGC bool
}

// joinLaunched joins the rendezvous of plan's launched job as env's rank
// (host names this machine). The context it returns ends when the session
// does, so a lost rank or an abort from another rank ends this one's work;
// release cancels it and closes the session. Run and GenerateRank start
// with it.
func joinLaunched(ctx context.Context, plan *partition.Plan, env launch.Env, host string, joinTimeout time.Duration) (*rendezvous.Session, context.Context, func(), error) {
	sess, err := rendezvous.Join(ctx, rendezvous.Options{
		Addr: env.RendezvousAddr, Rank: env.Rank, Size: plan.Size(), LaunchedSize: env.Size,
		ConfigHash: plan.Config.Hash(), JobID: env.JobID, Hostname: host, JoinTimeout: joinTimeout,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return sess, ctx, func() { cancel(); sess.Close() }, nil
}

// Run is one rank's whole run: rendezvous, allocate, warm up, measure,
// count, and gather every rank's results on rank 0, which returns them (the
// other ranks return nil). A lost rank, a mismatched config or world size
// ends every rank with an error naming the cause.
func Run(ctx context.Context, o RunOptions) ([]RankResult, error) {
	plan := o.Plan
	if plan == nil {
		return nil, errors.New("run: no plan")
	}
	cfg := plan.Config
	host, _ := os.Hostname()
	sess, ctx, release, err := joinLaunched(ctx, plan, o.Env, host, o.JoinTimeout)
	if err != nil {
		return nil, err
	}
	defer release()
	rank := o.Env.Rank
	// fail names the cause: a lost rank or another rank's abort when there is
	// one (the data plane often reports a healthy peer that stopped because of
	// it), else this rank's own error, which aborts every other rank.
	fail := func(err error) ([]RankResult, error) {
		return nil, sess.Cause(err, 2*time.Second)
	}
	if err := checkScheduling(); err != nil { // sched.go: real-time priority is refused
		return fail(err)
	}

	// Every rank's iteration starts and ends go on rank 0's clock, so that
	// rank 0 can time an iteration from the first rank's start.
	clockSync, base, err := syncClock(ctx, sess, host)
	if err != nil {
		return fail(err)
	}

	compute, err := o.NewCompute(plan, rank)
	if err != nil {
		return fail(fmt.Errorf("compute backend: %w", err))
	}
	defer compute.Close()
	comm, err := o.NewComm(ctx, sess, plan, rank, compute)
	if err != nil {
		return fail(fmt.Errorf("communicator: %w", err))
	}
	// Closed before the Compute it may queue on: at the end of a run that
	// got its results, by closeComm below; on every other return here.
	closed := false
	defer func() {
		if !closed {
			comm.Close()
		}
	}()
	rawGroups, err := NewGroups(ctx, comm, plan, rank)
	if err != nil {
		return fail(err)
	}

	groups := rawGroups
	meter, _ := compute.(DeviceMemory)
	var mem MemoryMeasure
	if meter != nil {
		var ok bool
		if mem, ok = meter.SetupMemory(); ok {
			if mem.AfterCommBytes, err = meter.DeviceUsedBytes(); err != nil {
				return fail(fmt.Errorf("device memory after the communicator: %w", err))
			}
		} else {
			meter = nil
		}
	}
	prefill, decode := plan.Program(rank, partition.Prefill), plan.Program(rank, partition.Decode)
	steps := cfg.Workload.OutputTokens - 1
	r := plan.Ranks[rank]
	res := RankResult{Rank: rank, Host: host, PID: os.Getpid(), Backend: o.Backend, Stage: r.Stage, TPIndex: r.TPIndex, Replica: r.Replica,
		LastStage: plan.LastStage(r.Stage), AllocatedBytes: compute.AllocatedBytes(), BusyS: map[string]float64{}, Clock: &clockSync,
		PhaseBusyS: map[string]map[string][]float64{string(partition.Prefill): {}, string(partition.Decode): {}}}

	res.Device, res.DataPlane = describe(compute), describe(comm)
	if o.PaceGC {
		res.GC = gcpace.Apply(gcpace.Headroom)
	}
	if it, ok := compute.(AllocationItemizer); ok {
		res.AllocatedByKind = it.AllocatedByKind()
	}

	total := cfg.Run.Warmup + cfg.Run.Iterations
	// Where decode steps run as device graphs, whose marks cannot tell the
	// ops apart, one more iteration after the measured ones runs every op
	// on its own with a device mark around each (OpSpans; not measured);
	// none where no traced op ran inside a graph.
	clock, _ := compute.(DeviceClock)
	graphs, _ := compute.(GraphLauncher)
	opByOp := o.TraceDecodeSteps > 0 && clock != nil && graphs != nil
	// On an asynchronous device the host timers see the enqueue only: without
	// a trace (whose spans are device-timed) one more iteration times the ops
	// on the device for the op check (CheckSpans).
	res.Async = clock != nil
	checkDevice := o.TraceDecodeSteps == 0 && clock != nil
	checkSteps := min(steps, CheckDecodeSteps)
	if o.TraceDecodeSteps > 0 {
		// Room for the traced iteration's spans before it starts: a
		// slice grown while it runs allocates and copies between its ops,
		// and the collections that brings fall in its calls (a traced
		// tp2-tiny prefill's all_reduce read 31–64 µs at its slowest,
		// its untraced iterations 2.4 µs a call).
		res.Spans = make([]Span, 0, len(prefill.Ops)+min(steps, o.TraceDecodeSteps)*len(decode.Ops))
	}
	var checkIt bool
	var windowStart, t0 time.Time
	var hostStart hoststat.Sample
	var hostOK bool
	var measured, tracing, extra bool
	graphed := false // an op of the traced iteration ran inside a graph
	iter := 0        // the measured iteration's index
	phase, step := partition.Prefill, -1
	// observe adds each op's time to the busy total of its kind over the
	// measured iterations, and records the last iteration's ops for a trace.
	labeler, _ := compute.(OpLabeler)
	// marked says whether the op being run gets device marks around it.
	marked := func() bool {
		switch {
		case !tracing:
			return false
		case checkIt: // the op check's iteration: its prefill and first steps
			return phase == partition.Prefill || step < checkSteps
		case extra: // the op-by-op replay of traced decode steps
			return phase != partition.Prefill && step < o.TraceDecodeSteps
		}
		return phase == partition.Prefill || step < o.TraceDecodeSteps
	}
	observe := func(op *partition.Op, start, end time.Time) {
		if checkIt {
			if marked() {
				res.CheckSpans = append(res.CheckSpans, spanOf(op, labeler, phase, step, start, end, t0))
			}
			return
		}
		if extra {
			if tracing && phase == partition.Decode && step < o.TraceDecodeSteps {
				res.OpSpans = append(res.OpSpans, spanOf(op, labeler, phase, step, start, end, t0))
			}
			return
		}
		if !measured {
			return
		}
		res.BusyS[string(op.Kind)] += end.Sub(start).Seconds()
		byKind := res.PhaseBusyS[string(phase)]
		v := byKind[string(op.Kind)]
		for len(v) <= iter {
			v = append(v, 0)
		}
		v[iter] += end.Sub(start).Seconds()
		byKind[string(op.Kind)] = v
		if tracing && (phase == partition.Prefill || step < o.TraceDecodeSteps) {
			sp := spanOf(op, labeler, phase, step, start, end, t0)
			if _, comm := op.Kind.Comm(); graphs != nil && !comm {
				sp.Graph = graphs.LastGraph()
				graphed = graphed || sp.Graph != 0
			}
			res.Spans = append(res.Spans, sp)
		}
	}
	// A device's ops are timed on the device in the traced iteration: marks
	// on its queue around each traced op, read back after the iteration.
	var mark func() error
	if clock != nil {
		mark = func() error {
			if !marked() {
				return nil
			}
			return clock.Mark()
		}
	}
	last := total
	if opByOp || checkDevice {
		last++
	}
	for it := 0; it < last; it++ {
		extra = it == total
		if extra && opByOp && !graphed {
			break // every traced op ran on its own: its marks already time it
		}
		checkIt = extra && checkDevice
		measured, iter = it >= cfg.Run.Warmup && !extra, it-cfg.Run.Warmup
		tracing = (o.TraceDecodeSteps > 0 && (it == total-1 || extra)) || checkIt
		if extra && graphs != nil {
			if err := graphs.SuspendGraphs(true); err != nil {
				return fail(err)
			}
		}
		if it == cfg.Run.Warmup {
			// Counts and busy time cover the measured iterations only.
			comm.Counter().Reset()
			windowStart = time.Now()
			hostStart, hostOK = hoststat.Read()
		}
		// Every iteration starts together: the KV cache is refilled from position 0.
		if err := comm.Barrier(ctx); err != nil {
			return fail(err)
		}
		if o.AfterBarrier != nil {
			o.AfterBarrier(rank, it)
		}
		t0 = time.Now()
		before := comm.Counter().Snapshot()
		phase, step = partition.Prefill, -1
		if err := runProgramMarked(ctx, prefill, compute, comm, groups, Past(plan, partition.Prefill, 0), observe, mark); err != nil {
			return fail(err)
		}
		if err := compute.Sync(ctx); err != nil { // a GPU's work is done, not only queued
			return fail(err)
		}
		prefillEnd := time.Since(t0).Seconds()
		mid := comm.Counter().Snapshot()
		ends := make([]float64, 0, steps)
		for s := 0; s < steps; s++ {
			phase, step = partition.Decode, s
			if err := runProgramMarked(ctx, decode, compute, comm, groups, Past(plan, partition.Decode, s), observe, mark); err != nil {
				return fail(err)
			}
			if err := compute.Sync(ctx); err != nil {
				return fail(err)
			}
			ends = append(ends, time.Since(t0).Seconds())
		}
		after := comm.Counter().Snapshot()
		// The last step's sampled tokens are on their way to the first stage:
		// receive them, so the next iteration starts clean (and a rendezvous
		// send, as NCCL's, completes). They belong to no step's count.
		if err := drainTokens(ctx, decode, compute, comm); err != nil {
			return fail(err)
		}
		if err := comm.Flush(ctx); err != nil {
			return fail(err)
		}
		if tracing && clock != nil {
			spans := res.Spans
			switch {
			case checkIt:
				spans = res.CheckSpans
			case extra:
				spans = res.OpSpans
			}
			if err := deviceSpans(clock, spans); err != nil {
				return fail(err)
			}
			if !checkIt {
				res.SpanClock = "device"
			}
		}
		if extra {
			if graphs != nil {
				if err := graphs.SuspendGraphs(false); err != nil {
					return fail(err)
				}
			}
			continue
		}
		if measured {
			res.PrefillCounts = res.PrefillCounts.Add(mid.Sub(before))
			res.DecodeCounts = res.DecodeCounts.Add(after.Sub(mid))
			res.PrefillS = append(res.PrefillS, prefillEnd)
			res.StartS = append(res.StartS, base.at(t0))
			res.StepEndS = append(res.StepEndS, ends)
		}
		if o.Progress != nil && rank == 0 {
			o.Progress(it+1, total)
		}
		if it == total-1 {
			res.WallS = time.Since(windowStart).Seconds()
			if end, ok := hoststat.Read(); ok && hostOK {
				w := hoststat.Between(hostStart, end)
				res.HostState = &w
			}
			if meter != nil {
				if mem.EndBytes, err = meter.DeviceUsedBytes(); err != nil {
					return fail(fmt.Errorf("device memory after the measured iterations: %w", err))
				}
				res.DeviceMemory = &mem
			}
			// The link's state at the end of the run, its groups'
			// collectives back to back (linkprobe.go); the comm is
			// quiescent (flushed) and the next iteration, if any, starts
			// from position 0; after the device memory is read, which its
			// calls must not move.
			if res.LinkProbes, err = probeLinks(ctx, decode, compute, comm, groups, o.LinkProbeCalls); err != nil {
				return fail(err)
			}
		}
	}
	results, err := gatherAtRankZero(ctx, comm, sess, res, "result")
	if err != nil {
		return nil, err
	}
	closed = true
	if err := comm.Close(); err != nil {
		return results, &CloseError{Rank: rank, Err: err}
	}
	return results, nil
}

// CloseError is a rank's communicator failing to close after the run
// itself succeeded (a wait log it was asked to write, a device
// communicator's teardown): Run returns it with rank 0's results, which
// are complete, so the caller can keep them and still fail.
type CloseError struct {
	Rank int
	Err  error
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("closing the communicator after the run: %v", e.Err)
}

func (e *CloseError) Unwrap() error { return e.Err }

// gatherAtRankZero is a run's last word: every rank waits at comm's barrier
// and sends v, as JSON, through the rendezvous; rank 0 returns every rank's
// value in rank order, the others nil. A failure of this rank's barrier or
// send is named by its cause (sess.Cause); a value rank 0 cannot read names
// its rank and what (as "what of rank r").
func gatherAtRankZero[T any](ctx context.Context, comm Comm, sess *rendezvous.Session, v T, what string) ([]T, error) {
	fail := func(err error) ([]T, error) { return nil, sess.Cause(err, 2*time.Second) }
	if err := comm.Barrier(ctx); err != nil {
		return fail(err)
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return fail(err)
	}
	all, err := sess.Gather(ctx, payload)
	if err != nil {
		return fail(err)
	}
	if sess.Rank() != 0 {
		return nil, nil
	}
	out := make([]T, len(all))
	for r, p := range all {
		if err := json.Unmarshal(p, &out[r]); err != nil {
			return nil, fmt.Errorf("%s of rank %d: %w", what, r, err)
		}
	}
	return out, nil
}

// spanOf is op's span as the host saw it, from the iteration's start t0.
func spanOf(op *partition.Op, labeler OpLabeler, phase partition.Phase, step int, start, end, t0 time.Time) Span {
	name := op.Name
	if labeler != nil {
		name += labeler.OpLabel(op) // the kernel a backend chose by shape
	}
	return Span{Name: name, Kind: string(op.Kind), Phase: string(phase), Step: step,
		Microbatch: op.Microbatch, Chunk: op.Chunk, Peer: op.Peer, Bytes: op.Bytes,
		StartS: start.Sub(t0).Seconds(), DurS: end.Sub(start).Seconds()}
}

// deviceSpans replaces the traced spans' host times with the device times
// of the marks made before and after each (two per span, in order): start
// from the first mark, duration between its two. A span whose marks were
// not timed keeps its host time.
func deviceSpans(clock DeviceClock, spans []Span) error {
	marks, err := clock.Marks()
	if err != nil {
		return fmt.Errorf("trace: device times: %w", err)
	}
	if len(marks) != 2*len(spans) {
		return fmt.Errorf("trace: %d device marks for %d traced ops, want two per op", len(marks), len(spans))
	}
	for i := range spans {
		a, b := marks[2*i], marks[2*i+1]
		if math.IsNaN(a) || math.IsNaN(b) {
			continue
		}
		spans[i].StartS, spans[i].DurS, spans[i].Device = a, b-a, true
	}
	return nil
}

// drainTokens runs the decode Program's token receives once more: the
// tokens the last decode step of an iteration sent back to the first stage.
func drainTokens(ctx context.Context, decode partition.Program, c Compute, comm Comm) error {
	for i := range decode.Ops {
		op := &decode.Ops[i]
		if op.Kind != partition.Recv || op.Payload != partition.PayloadTokens {
			continue
		}
		buf, err := c.Buffer(op.Out, op.Microbatch, op.Elems)
		if err != nil {
			return err
		}
		if err := comm.Recv(ctx, buf, op.Peer); err != nil {
			return opErr(decode, op, err)
		}
	}
	return nil
}

// describe is what a backend says of itself for results files ("" if nothing).
func describe(x any) string {
	if d, ok := x.(interface{ Describe() string }); ok {
		return d.Describe()
	}
	return ""
}
