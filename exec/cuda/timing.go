package cuda

import (
	"errors"
	"math"
	"sort"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/partition"
)

// OpTime is the GPU time of one op of the Programs (summed over
// micro-batches, steps and iterations), between CUDA events recorded on the
// rank's stream before and after its launches. A decode segment launched as
// a graph is one entry named "graph" (kind "graph"): its ops have no events
// of their own.
type OpTime struct {
	Name  string  `json:"name"`
	Kind  string  `json:"kind"`
	Calls int64   `json:"calls"`
	GPUS  float64 `json:"gpu_s"`
}

// LaunchStats counts the host side of the backend: what the CPU spent
// queueing work, and what the decode graphs saved.
type LaunchStats struct {
	// Ops is the Exec calls; Launches the kernels, GEMMs, copies and
	// memsets queued one by one; HostS the host seconds inside Exec.
	Ops      int64   `json:"ops"`
	Launches int64   `json:"launches"`
	HostS    float64 `json:"host_s"`
	// Segments is the compute-only runs of the decode Program (graph
	// candidates); GraphsCaptured of them were captured.
	Segments         int    `json:"segments"`
	GraphsCaptured   int    `json:"graphs_captured"`
	CaptureFailures  int    `json:"capture_failures"`
	LastCaptureError string `json:"last_capture_error,omitempty"`
	GraphLaunches    int64  `json:"graph_launches"`
	// CaptureHostS is the host time of the captured runs (capture,
	// instantiation and the first launch).
	CaptureHostS float64 `json:"capture_host_s"`
	// EagerSegmentRuns and EagerSegmentHostS are decode segments run op by
	// op, from the first op's Exec to the end of the last one's, each
	// segment's first run left out (warm-up); GraphSegmentRuns and
	// GraphSegmentHostS the same for segments run as one graph launch.
	EagerSegmentRuns  int64   `json:"eager_segment_runs"`
	EagerSegmentHostS float64 `json:"eager_segment_host_s"`
	GraphSegmentRuns  int64   `json:"graph_segment_runs"`
	GraphSegmentHostS float64 `json:"graph_segment_host_s"`
	// GraphSavedHostS is the host time the graphs saved: for each segment,
	// its graph runs × (its mean op-by-op host time − its mean graph host
	// time), summed over the segments measured both ways.
	GraphSavedHostS float64 `json:"graph_saved_host_s"`
}

// LaunchStats returns the counters so far.
func (c *Compute) LaunchStats() LaunchStats {
	s := c.stats
	if c.graphs == nil {
		return s
	}
	s.Segments = len(c.graphs.segs)
	for _, seg := range c.graphs.segs {
		s.EagerSegmentRuns += int64(seg.eagerTimed)
		s.EagerSegmentHostS += seg.eagerHostS
		s.GraphSegmentRuns += int64(seg.graphRuns)
		s.GraphSegmentHostS += seg.graphHostS
		if seg.eagerTimed > 0 && seg.graphRuns > 0 {
			eager := seg.eagerHostS / float64(seg.eagerTimed)
			graph := seg.graphHostS / float64(seg.graphRuns)
			s.GraphSavedHostS += float64(seg.graphRuns) * (eager - graph)
		}
	}
	return s
}

// Launched is LaunchStats().Launches: what the backend has queued one by
// one so far (the serving engine reads it without importing this package).
func (c *Compute) Launched() int64 { return c.stats.Launches }

// OpTimes waits for the queued work and returns the GPU time per op, by
// name.
func (c *Compute) OpTimes() ([]OpTime, error) {
	unpin, err := c.pin()
	if err != nil {
		return nil, err
	}
	defer unpin()
	if err := c.stream.Synchronize(); err != nil {
		return nil, err
	}
	if err := c.timer.flush(); err != nil {
		return nil, err
	}
	out := make([]OpTime, 0, len(c.timer.acc))
	for _, t := range c.timer.acc {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ResetTimes clears OpTimes and LaunchStats (between warm-up and
// measurement); captured graphs stay.
func (c *Compute) ResetTimes() error {
	unpin, err := c.pin()
	if err != nil {
		return err
	}
	defer unpin()
	if err := c.stream.Synchronize(); err != nil {
		return err
	}
	if err := c.timer.flush(); err != nil {
		return err
	}
	c.timer.acc = map[string]*OpTime{}
	captured := c.stats.GraphsCaptured
	c.stats = LaunchStats{GraphsCaptured: captured}
	if c.graphs != nil {
		for _, s := range c.graphs.segs {
			s.eagerTimed, s.eagerHostS, s.graphRuns, s.graphHostS = 0, 0, 0, 0
		}
	}
	return nil
}

// mark is one exec.DeviceClock mark: an event recorded on the stream, or
// none (ok false) when it was made during a graph capture.
type mark struct {
	e  cuda.Event
	ok bool
}

// Mark records an event on the rank's stream after the work queued so far
// (exec.DeviceClock), without waiting. During a decode segment's capture an
// event record would become part of the graph, so the mark is left untimed.
func (c *Compute) Mark() error {
	if c.fault != nil {
		return c.fault
	}
	unpin, err := c.pin()
	if err != nil {
		return err
	}
	defer unpin()
	if c.capturing {
		c.marks = append(c.marks, mark{})
		return nil
	}
	e, err := c.timer.event()
	if err != nil {
		return err
	}
	if err := e.Record(c.stream); err != nil {
		c.timer.release(e)
		return err
	}
	c.marks = append(c.marks, mark{e, true})
	return nil
}

// Marks waits for the stream and returns each mark's time since the first
// timed one, in seconds (NaN for an untimed mark), and forgets them.
func (c *Compute) Marks() ([]float64, error) {
	unpin, err := c.pin()
	if err != nil {
		return nil, err
	}
	defer unpin()
	marks := c.marks
	c.marks = nil
	defer func() {
		for _, m := range marks {
			if m.ok {
				c.timer.release(m.e)
			}
		}
	}()
	if err := c.stream.Synchronize(); err != nil {
		return nil, err
	}
	out := make([]float64, len(marks))
	var first *cuda.Event
	for i, m := range marks {
		if !m.ok {
			out[i] = math.NaN()
			continue
		}
		if first == nil {
			first = &marks[i].e
		}
		ms, err := cuda.ElapsedMS(*first, m.e)
		if err != nil {
			return nil, err
		}
		out[i] = float64(ms) / 1e3
	}
	return out, nil
}

// timedOp runs an op op by op, between two events when timing is on.
func (c *Compute) timedOp(op *partition.Op, past int) error {
	if !c.timer.on {
		return c.op(op, past)
	}
	start, err := c.timer.begin()
	if err != nil {
		return err
	}
	if err := c.op(op, past); err != nil {
		c.timer.release(start)
		return err
	}
	return c.timer.end(start, op.Name+c.opTag(op), string(op.Kind)) // opTag: flash.go
}

// maxPending is how many recorded spans wait before the finished ones are
// read (without waiting for the GPU).
const maxPending = 256

type span struct {
	start, end cuda.Event
	name, kind string
}

// timer records CUDA events around ops and sums their elapsed times,
// reusing events.
type timer struct {
	on      bool
	c       *Compute
	free    []cuda.Event
	made    []cuda.Event
	pending []span
	acc     map[string]*OpTime
}

func newTimer(c *Compute, on bool) *timer {
	return &timer{on: on, c: c, acc: map[string]*OpTime{}}
}

func (t *timer) event() (cuda.Event, error) {
	if n := len(t.free); n > 0 {
		e := t.free[n-1]
		t.free = t.free[:n-1]
		return e, nil
	}
	e, err := t.c.drv.NewEvent(cuda.EventDefault)
	if err != nil {
		return cuda.Event{}, err
	}
	t.made = append(t.made, e)
	return e, nil
}

func (t *timer) release(e cuda.Event) { t.free = append(t.free, e) }

// begin records a start event (a zero Event when timing is off).
func (t *timer) begin() (cuda.Event, error) {
	if !t.on {
		return cuda.Event{}, nil
	}
	e, err := t.event()
	if err != nil {
		return cuda.Event{}, err
	}
	if err := e.Record(t.c.stream); err != nil {
		t.release(e)
		return cuda.Event{}, err
	}
	return e, nil
}

// end records the end event of a span begun with begin.
func (t *timer) end(start cuda.Event, name, kind string) error {
	if !t.on {
		return nil
	}
	e, err := t.event()
	if err != nil {
		return err
	}
	if err := e.Record(t.c.stream); err != nil {
		t.release(e)
		return err
	}
	t.pending = append(t.pending, span{start, e, name, kind})
	if len(t.pending) >= maxPending {
		return t.poll(false)
	}
	return nil
}

// poll adds the finished spans, oldest first, stopping at the first that
// is not (all of them, after a stream synchronization, when all is set).
func (t *timer) poll(all bool) error {
	n := 0
	for _, s := range t.pending {
		if !all {
			done, err := s.end.Done()
			if err != nil {
				return err
			}
			if !done {
				break
			}
		}
		ms, err := cuda.ElapsedMS(s.start, s.end)
		if err != nil {
			return err
		}
		a := t.acc[s.name]
		if a == nil {
			a = &OpTime{Name: s.name, Kind: s.kind}
			t.acc[s.name] = a
		}
		a.Calls++
		a.GPUS += float64(ms) / 1e3
		t.release(s.start)
		t.release(s.end)
		n++
	}
	t.pending = append(t.pending[:0], t.pending[n:]...)
	return nil
}

// flush adds every span; the stream must have been synchronized.
func (t *timer) flush() error { return t.poll(true) }

func (t *timer) destroy() error {
	var errs []error
	for _, e := range t.made {
		errs = append(errs, e.Destroy())
	}
	t.made, t.free, t.pending = nil, nil, nil
	return errors.Join(errs...)
}
