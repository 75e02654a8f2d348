package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// Decode-step CUDA graphs.
//
// The interpreter hands the backend one op at a time, and communication
// ops go to another object (the exec.Comm), so the backend cannot capture
// a whole step. It captures what it owns: a segment, a maximal run of
// consecutive compute ops of the rank's decode Program (between two
// communication ops; on one GPU without pipeline stages, the whole step).
// A segment runs op by op GraphAfter times (warm-up: cuBLAS picks its
// kernels, the first run's costs pass), is then captured on its next run
// (stream capture in thread-local mode, the goroutine pinned from its
// first op to its last), instantiated and launched; from then on its first
// op launches the graph and the others only check that the Program goes
// on as captured and keep the host's bookkeeping. The only value that
// changes between steps, the cache position, lives in device memory
// (mbState.pos) and is set with a memset before each launch, outside the
// graph. If a capture fails, the captured ops are run op by op at once and
// the segment stays eager.

type segMode int

const (
	segEager segMode = iota
	segCapture
	segReplay
)

// segOp identifies an op of a decode Program: names are unique per
// micro-batch.
type segOp struct {
	name string
	mb   int
}

type segment struct {
	id     int
	ops    []segOp
	mbs    []int
	failed bool
	ready  bool
	exec   cuda.GraphExec

	eagerRuns  int     // op-by-op runs, the first included
	eagerTimed int     // op-by-op runs after the first
	eagerHostS float64 // host time of the timed ones
	graphRuns  int
	graphHostS float64
}

type pendingOp struct {
	op   *partition.Op
	past int
}

type mbSnapshot struct {
	rows, end         int
	hasOut, hasSample bool
	layout            outLayout
}

type graphs struct {
	enabled bool
	after   int
	first   map[segOp]*segment
	segs    []*segment

	// The segment in flight.
	cur     *segment
	pos     int
	mode    segMode
	past    int
	start   time.Time
	saved   []mbSnapshot
	pending []pendingOp // ops captured so far, run op by op if the capture fails
	// last is how the last Exec's op ran (LastGraph).
	last int
	// suspended runs every op op by op (SuspendGraphs).
	suspended bool
}

// newGraphs finds the segments of the rank's decode Program.
func newGraphs(c *Compute) *graphs {
	g := &graphs{enabled: c.opts.Graphs, after: c.opts.GraphAfter, first: map[segOp]*segment{}}
	if g.after <= 0 {
		g.after = 2
	}
	prog := c.plan.Program(c.rank.Rank, partition.Decode)
	var cur *segment
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if _, comm := op.Kind.Comm(); comm {
			cur = nil
			continue
		}
		k := segOp{op.Name, op.Microbatch}
		if cur == nil {
			cur = &segment{id: len(g.segs)}
			g.segs = append(g.segs, cur)
			g.first[k] = cur
		}
		cur.ops = append(cur.ops, k)
		if len(cur.mbs) == 0 || cur.mbs[len(cur.mbs)-1] != op.Microbatch {
			cur.mbs = append(cur.mbs, op.Microbatch)
		}
	}
	return g
}

// run is Exec's body: the op, within its segment's bookkeeping.
func (c *Compute) run(op *partition.Op, past int) error {
	g := c.graphs
	k := segOp{op.Name, op.Microbatch}
	if g.cur != nil && (g.cur.ops[g.pos] != k || past != g.past) {
		want := g.cur.ops[g.pos]
		cause := fmt.Errorf("op %s (micro-batch %d) at position %d arrived where decode segment %d expects %s (micro-batch %d) at %d",
			op.Name, op.Microbatch, past, g.cur.id, want.name, want.mb, g.past)
		if err := c.leaveSegment(cause); err != nil {
			return err
		}
	}
	if g.cur == nil && past >= c.frame.Prompt && !g.suspended {
		if seg := g.first[k]; seg != nil {
			if err := c.beginSegment(seg, past); err != nil {
				return err
			}
		}
	}
	mode := segEager
	if g.cur != nil {
		mode = g.mode
	}
	var err error
	g.last = 0
	switch mode {
	case segEager:
		err = c.timedOp(op, past)
	case segCapture:
		g.pending = append(g.pending, pendingOp{op, past})
		err = c.op(op, past)
	case segReplay:
		g.last = -1
		if g.pos == 0 {
			g.last = len(g.cur.ops) // beginSegment launched the graph
		}
		c.replay = true
		err = c.op(op, past)
		c.replay = false
	}
	if g.cur == nil {
		return err
	}
	if err != nil {
		if lerr := c.leaveSegment(err); lerr != nil {
			return lerr
		}
		return err
	}
	g.pos++
	if g.pos == len(g.cur.ops) {
		return c.endSegment()
	}
	return nil
}

var _ pexec.GraphLauncher = (*Compute)(nil)

// LastGraph says how the last Exec's op ran (exec.GraphLauncher): 0 on
// its own or into a capture, the segment's op count when it launched the
// segment's graph, −1 when that graph ran it.
func (c *Compute) LastGraph() int {
	if c.graphs == nil {
		return 0
	}
	return c.graphs.last
}

// SuspendGraphs runs every decode op op by op while on, between steps
// (exec.GraphLauncher): a traced iteration times each op of a step that
// otherwise runs as graphs. Captured graphs stay for when it is off. It
// is refused inside a segment.
func (c *Compute) SuspendGraphs(on bool) error {
	if c.graphs == nil {
		return nil
	}
	if seg := c.graphs.cur; seg != nil {
		return fmt.Errorf("cuda: graphs suspended inside decode segment %d (at op %d of %d)", seg.id, c.graphs.pos, len(seg.ops))
	}
	c.graphs.suspended = on
	return nil
}

// beginSegment starts seg at its first op: launches its graph, begins its
// capture, or runs it op by op.
func (c *Compute) beginSegment(seg *segment, past int) error {
	g := c.graphs
	if past+1 > c.frame.Context {
		return fmt.Errorf("positions [%d, %d) exceed the context of %d", past, past+1, c.frame.Context)
	}
	g.cur, g.pos, g.past, g.start, g.mode = seg, 0, past, time.Now(), segEager
	capture := g.enabled && !seg.failed && seg.eagerRuns >= g.after && c.drv.HasGraphs()
	if !seg.ready && !capture {
		return nil
	}
	for _, mb := range seg.mbs {
		if err := c.setPos(c.mbs[mb], past); err != nil {
			return err
		}
	}
	if seg.ready {
		g.mode = segReplay
		return c.launchGraph(seg)
	}
	g.saved = g.saved[:0]
	for i, st := range c.mbs {
		p := c.frame.Passes[i]
		g.saved = append(g.saved, mbSnapshot{p.Rows, p.End, st.hasOut, st.hasSample, st.layout})
	}
	g.pending = g.pending[:0]
	runtime.LockOSThread() // held until the capture ends, across Exec calls
	if err := c.stream.BeginCapture(cuda.CaptureThreadLocal); err != nil {
		runtime.UnlockOSThread()
		c.captureFailed(seg, err)
		return nil
	}
	c.capturing = true
	g.mode = segCapture
	return nil
}

func (c *Compute) launchGraph(seg *segment) error {
	start, err := c.timer.begin()
	if err != nil {
		return err
	}
	if err := seg.exec.Launch(c.stream); err != nil {
		return err
	}
	c.stats.GraphLaunches++
	return c.timer.end(start, "graph", "graph")
}

// endSegment closes the segment after its last op.
func (c *Compute) endSegment() error {
	g := c.graphs
	seg, host := g.cur, time.Since(g.start).Seconds()
	g.cur = nil
	switch g.mode {
	case segEager:
		seg.eagerRuns++
		if seg.eagerRuns > 1 {
			seg.eagerTimed++
			seg.eagerHostS += host
		}
	case segReplay:
		seg.graphRuns++
		seg.graphHostS += host
	case segCapture:
		return c.finishCapture(seg)
	}
	return nil
}

// finishCapture ends the capture, instantiates the graph and launches it:
// the captured step has not run yet.
func (c *Compute) finishCapture(seg *segment) error {
	g := c.graphs
	graph, err := c.stream.EndCapture()
	c.capturing = false
	runtime.UnlockOSThread()
	if err == nil {
		var exec cuda.GraphExec
		exec, err = graph.Instantiate()
		graph.Destroy()
		if err == nil {
			seg.exec, seg.ready = exec, true
		}
	}
	if err != nil {
		c.captureFailed(seg, err)
		return c.rerunPending()
	}
	c.stats.GraphsCaptured++
	if err := c.launchGraph(seg); err != nil {
		return err
	}
	g.pending = g.pending[:0]
	c.stats.CaptureHostS += time.Since(g.start).Seconds()
	return nil
}

// leaveSegment handles a segment that does not go on as found: op by op it
// is forgotten; a capture is dropped and its ops run op by op; a replayed
// graph has already run the whole segment, so the Program went astray.
func (c *Compute) leaveSegment(cause error) error {
	g := c.graphs
	seg := g.cur
	switch g.mode {
	case segEager:
		g.cur = nil
		return nil
	case segReplay:
		g.cur = nil
		return fmt.Errorf("cuda: decode graph of segment %d already ran: %w", seg.id, cause)
	}
	return c.dropCapture(cause)
}

// dropCapture ends the capture in flight and runs its ops op by op; the
// segment stays eager.
func (c *Compute) dropCapture(cause error) error {
	seg := c.graphs.cur
	c.abandonCapture()
	c.captureFailed(seg, cause)
	return c.rerunPending()
}

// abandonCapture ends a capture in flight and drops what it recorded.
func (c *Compute) abandonCapture() {
	if !c.capturing {
		return
	}
	if graph, err := c.stream.EndCapture(); err == nil {
		graph.Destroy()
	}
	c.capturing = false
	runtime.UnlockOSThread()
	if g := c.graphs; g.cur != nil {
		g.cur.failed = true
		g.cur = nil
	}
}

func (c *Compute) captureFailed(seg *segment, err error) {
	seg.failed = true
	c.stats.CaptureFailures++
	c.stats.LastCaptureError = err.Error()
	c.graphs.mode = segEager
}

// rerunPending runs the ops of a failed capture op by op, from the host
// state they started with.
func (c *Compute) rerunPending() error {
	g := c.graphs
	g.cur = nil
	for i, s := range g.saved {
		st, p := c.mbs[i], c.frame.Passes[i]
		p.Rows, p.End, st.hasOut, st.hasSample, st.layout = s.rows, s.end, s.hasOut, s.hasSample, s.layout
	}
	var errs []error
	for _, p := range g.pending {
		if err := c.timedOp(p.op, p.past); err != nil {
			errs = append(errs, err)
			break
		}
	}
	g.pending = g.pending[:0]
	return errors.Join(errs...)
}

func (g *graphs) destroy() error {
	var errs []error
	for _, s := range g.segs {
		if s.ready {
			errs = append(errs, s.exec.Destroy())
			s.ready = false
		}
	}
	return errors.Join(errs...)
}
