package calib

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/tcpcomm"
)

// Op times at the job's placement. A run's n local ranks are n processes
// that the host's scheduler shares its cores among, with whatever else the
// host runs; goroutines of one process sharing its threads are scheduled
// otherwise (Go preempts a goroutine after 10 ms, the kernel a process
// after a slice of a few ms, and a process that ran after 15 others finds
// its caches holding what they left). calibrate therefore times the
// op-time table at each --op-ranks count n > 1 with n process ranks
// (LinkArgv, started as a run's local ranks are), every one running the
// same (config, rank)'s passes at once, a barrier between two
// (config, rank)s, in blocks of at least OpBlockMin. Each op is timed by
// the lesser of its wall time and its thread's CPU time (less the clock's
// own cost: a system call, 0.4 µs on the project's VM, which would
// otherwise inflate the shortest ops): its time on a core at that
// placement (the caches, memory bandwidth and switches the n processes
// cost each other), without the waits for a core — the shared-core stretch sim adds itself by the
// ranks it finds computing at each moment (sim/optable_share.go), so that
// nothing is charged twice (docs/costmodel.md, "Op times at the job's
// placement"). Each rank also reports the stretch it ran at, its blocks'
// wall time over their CPU time, which calibrate notes.

// OpBlockMin is the shortest block of op-time iterations a process rank
// averages over: several of the kernel's time slices (0.75–6 ms), so that
// every rank's blocks overlap the others' as a run's iterations (tens of
// ms) do, and the block's wall over CPU time is the stretch it ran at.
const OpBlockMin = 20 * time.Millisecond

// opTimesResultPrefix starts the line each rank writes its op times on.
const opTimesResultPrefix = "partbench-op-times "

// opProcSpec is what every process rank of an op-time measurement runs
// (linkSpec.OpTimes).
type opProcSpec struct {
	Configs   []string `json:"configs"`
	Blocks    int      `json:"blocks"`
	MinBlockS float64  `json:"min_block_s"`
	// Turns makes the ranks take turns (turnRing): one pass per turn,
	// Blocks passes of each of its (config, rank)'s passes, no blocks.
	Turns bool `json:"turns,omitempty"`
}

// rankOpTimes is what one process rank reports: its table and the stretch
// it ran at (0: not measured).
type rankOpTimes struct {
	Stretch float64          `json:"stretch"`
	Times   []configs.OpTime `json:"times"`
	// Rank and Turns, taking turns: the process rank, and per turn its
	// stamps (turnStamp: where its receive returned, where its hand-on's
	// Send call began and returned, its time off the core; turnhop.go).
	Rank  int         `json:"rank"`
	Turns []turnStamp `json:"-"` // written on lines of their own (turnhop.go)
}

// measureOpTimesProcs times the compute ops of configs' Programs with n
// process ranks at once (argv re-runs this program as LinkWorker), each
// op by its CPU time, blocks blocks of at least minBlock each, and merges
// the ranks' tables (mergeOpTimes). It returns the stretch each rank ran
// at too (wall over CPU time of its blocks).
//
// With turns the ranks take turns instead (turnRing; minBlock unused): the
// entries' kinds are configs.TurnsKind of the op's, and the stretches 0.
func measureOpTimesProcs(ctx context.Context, argv []string, n int, names []string, blocks int, minBlock time.Duration, turns bool) ([]configs.OpTime, []float64, error) {
	ts, stretches, _, err := measureOpTimesProcsHops(ctx, argv, n, names, blocks, minBlock, turns)
	return ts, stretches, err
}

// turnsMeasured is what the turns of an op-time measurement taken in
// turns show beside the op times: the hand-offs between the ranks' turns
// (turnHops), each turn's time off its core (turnOffs) and how the
// hand-on's Send call and the next rank's return from its receive were
// ordered (turnSendOrder).
type turnsMeasured struct {
	hops  []turnHopBin
	off   []turnOffBin
	order turnOrder
}

// measureOpTimesProcsHops is measureOpTimesProcs also returning, taking
// turns, what the ranks' turns show (nil at once).
func measureOpTimesProcsHops(ctx context.Context, argv []string, n int, names []string, blocks int, minBlock time.Duration, turns bool) ([]configs.OpTime, []float64, *turnsMeasured, error) {
	out, errOut, err := spawnWorkers(ctx, argv, n, linkSpec{OpTimes: &opProcSpec{Configs: names, Blocks: blocks, MinBlockS: minBlock.Seconds(), Turns: turns}}, "op times")
	if err != nil {
		return nil, nil, nil, err
	}
	ranks, err := parseOpTimesLines(out)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(ranks) != n {
		return nil, nil, nil, fmt.Errorf("op times: %d of %d process ranks reported their times:\n%s%s", len(ranks), n, out.String(), errOut.String())
	}
	stretches := make([]float64, n)
	for i, r := range ranks {
		stretches[i] = r.Stretch
	}
	ts := mergeOpTimes(ranks, n)
	if turns {
		for i := range ts {
			ts[i].Kind = configs.TurnsKind(ts[i].Kind)
		}
	}
	if !turns {
		return ts, stretches, nil, nil
	}
	return ts, stretches, &turnsMeasured{hops: turnHops(ranks), off: turnOffs(ranks), order: turnSendOrder(ranks)}, nil
}

// parseOpTimesLines reads every rank's op-time line from r (each rank's
// output prefixed by the launcher).
func parseOpTimesLines(r io.Reader) ([]rankOpTimes, error) {
	var out []rankOpTimes
	stamps := map[int][]turnStamp{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), turnStampsPrefix); ok {
			rank, ts, err := parseTurnStamps(rest)
			if err != nil {
				return nil, err
			}
			stamps[rank] = append(stamps[rank], ts...)
			continue
		}
		_, rest, ok := strings.Cut(sc.Text(), opTimesResultPrefix)
		if !ok {
			continue
		}
		var rt rankOpTimes
		if err := json.Unmarshal([]byte(rest), &rt); err != nil {
			return nil, fmt.Errorf("op times: a process rank's times: %w", err)
		}
		out = append(out, rt)
	}
	for i := range out {
		out[i].Turns = stamps[out[i].Rank]
	}
	return out, sc.Err()
}

// mergeOpTimes joins the tables the n process ranks measured at once into
// one entry per kind, shape, size and context: the mean of the ranks'
// times (each a median over blocks of the block's mean; the mean over
// ranks, as a run's op check sums its ranks' times), the extremes over
// all, the samples summed, Ranks n.
func mergeOpTimes(ranks []rankOpTimes, n int) []configs.OpTime {
	type key struct {
		kind, shape   string
		size, context int64
	}
	by := map[key][]configs.OpTime{}
	var order []key
	for _, r := range ranks {
		for _, e := range r.Times {
			k := key{e.Kind, e.Shape, e.Size, e.Context}
			if by[k] == nil {
				order = append(order, k)
			}
			by[k] = append(by[k], e)
		}
	}
	out := make([]configs.OpTime, 0, len(order))
	for _, k := range order {
		es := by[k]
		times := make([]float64, len(es))
		m := configs.OpTime{Kind: k.kind, Shape: k.shape, Size: k.size, Context: k.context, TimeMinS: es[0].TimeMinS, TimeMaxS: es[0].TimeMaxS, Ranks: n}
		for i, e := range es {
			times[i] = e.TimeS
			m.TimeMinS, m.TimeMaxS = min(m.TimeMinS, e.TimeMinS), max(m.TimeMaxS, e.TimeMaxS)
			m.Samples += e.Samples
		}
		m.TimeS = stat.Mean(times, nil)
		m.TimeMinS, m.TimeMaxS = min(m.TimeMinS, m.TimeS), max(m.TimeMaxS, m.TimeS)
		out = append(out, m)
	}
	sortOpTimes(out)
	return out
}

// opTimesRank is one process rank of an op-time measurement: every rank
// times the same (config, rank)'s passes through its own CPU Compute, a
// barrier on c before each, and writes its table and the stretch it ran at
// to stdout as one line.
func opTimesRank(ctx context.Context, c *tcpcomm.Comm, spec opProcSpec, stdout io.Writer) error {
	plans, err := opPlans(spec.Configs)
	if err != nil {
		return fmt.Errorf("op times: %w", err)
	}
	if spec.Blocks < 1 {
		return fmt.Errorf("op times: blocks must be ≥ 1 (got %d)", spec.Blocks)
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	minBlock := time.Duration(spec.MinBlockS * float64(time.Second))
	var rt rankOpTimes
	bo := blockOpts{minBlock: minBlock, stretch: &rt.Stretch, onCore: true}
	step := func() error { return c.Barrier(ctx) }
	rt.Rank = c.Rank()
	if spec.Turns {
		ring := newTurnRing(ctx, c, c.Rank(), c.Size())
		// Each turn's wall and thread CPU time, both read where the turn
		// begins and where its hand-on begins (the worker is held on its
		// OS thread: blockOpts.onCore), give its time off the core
		// (turnoff.go).
		var cpuAt time.Duration
		cpuOK := false
		await := func() error {
			err := ring.await()
			rt.Turns = append(rt.Turns, turnStamp{Await: time.Now().UnixNano()})
			cpuAt, cpuOK = threadCPU()
			return err
		}
		handOn := func() error {
			k := len(rt.Turns)
			if k > 0 {
				t := &rt.Turns[k-1]
				t.HandOn = time.Now().UnixNano()
				if cpu, ok := threadCPU(); ok && cpuOK {
					t.Off, t.OffOK = turnOffNs(t.HandOn-t.Await, cpu-cpuAt), true
				}
			}
			err := ring.handOn()
			if k > 0 {
				rt.Turns[k-1].Sent = time.Now().UnixNano()
			}
			return err
		}
		bo = blockOpts{onCore: true, turn: await, done: handOn}
		step = func() error {
			if err := ring.end(); err != nil {
				return err
			}
			return c.Barrier(ctx)
		}
	}
	rt.Times, err = measureOpTimesBlocks(ctx, plans, 1, spec.Blocks, bo, CPUCompute, nil, step)
	if err != nil {
		return err
	}
	js, err := json.Marshal(rt)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "%s%s\n", opTimesResultPrefix, js); err != nil {
		return err
	}
	if err := writeTurnStamps(stdout, rt.Rank, rt.Turns); err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	return c.Flush(ctx)
}

// turnRing passes a token round the process ranks of an op-time
// measurement taken in turns, as a pipeline's stages pass a micro-batch
// on: rank r computes one pass once rank r−1 has handed the turn on
// (through the run's communicator, whose receive spins briefly and then
// sleeps), and hands it to rank r+1 when the pass is done; rank 0 starts
// each (config, rank) without waiting and ends it by taking the last
// turn back (end). One rank computes at a time, the others wait off their
// cores, and between two of its turns every other rank has run — the
// caches a pipeline's stage finds at its turn, which ranks computing at
// once for a time slice each do not see between two ops.
type turnRing struct {
	ctx     context.Context
	c       p2p
	rank, n int
	started bool
	token   pexec.F32
}

// p2p is what a turnRing sends and receives the token through.
type p2p interface {
	Send(ctx context.Context, buf pexec.Buffer, peer int) error
	Recv(ctx context.Context, buf pexec.Buffer, peer int) error
}

func newTurnRing(ctx context.Context, c p2p, rank, n int) *turnRing {
	return &turnRing{ctx: ctx, c: c, rank: rank, n: n, token: pexec.F32(make([]float32, 1))}
}

// await returns once this rank holds the turn.
func (r *turnRing) await() error {
	if r.n < 2 {
		return nil
	}
	if r.rank == 0 && !r.started {
		r.started = true
		return nil
	}
	return r.c.Recv(r.ctx, r.token, (r.rank+r.n-1)%r.n)
}

// handOn passes the turn to the next rank.
func (r *turnRing) handOn() error {
	if r.n < 2 {
		return nil
	}
	return r.c.Send(r.ctx, r.token, (r.rank+1)%r.n)
}

// end closes a (config, rank): rank 0 takes back the turn the last rank
// handed on, so that no token is left in flight for the next.
func (r *turnRing) end() error {
	if r.rank != 0 || !r.started {
		return nil
	}
	r.started = false
	return r.c.Recv(r.ctx, r.token, r.n-1)
}

// turnsOverAtOnce says, per op kind, the median over its entries of the
// time taken in turns over the time at once at the same shape, size and
// context ("gemm 1.6, attention 1.3, …"; kinds in the order of tt).
func turnsOverAtOnce(tt, once []configs.OpTime) string {
	type key struct {
		kind, shape   string
		size, context int64
	}
	at := map[key]float64{}
	for _, e := range once {
		at[key{e.Kind, e.Shape, e.Size, e.Context}] = e.TimeS
	}
	ratios := map[string][]float64{}
	var kinds []string
	for _, e := range tt {
		kind := strings.TrimPrefix(e.Kind, configs.TurnsKindPrefix)
		o, ok := at[key{kind, e.Shape, e.Size, e.Context}]
		if !ok || !(o > 0) {
			continue
		}
		if ratios[kind] == nil {
			kinds = append(kinds, kind)
		}
		ratios[kind] = append(ratios[kind], e.TimeS/o)
	}
	if len(kinds) == 0 {
		return "no entry at a shape measured at once"
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.3g", k, medianOf(ratios[k]))
	}
	return "over the times at once (median over each kind's entries): " + strings.Join(parts, ", ")
}
