package exec

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/stats"
)

// The emulation's per-op median is the runs' p50: the middle sample of an
// odd count, the lower middle of an even one (gonum's empirical quantile).
func TestMediansIsTheP50OfSummarize(t *testing.T) {
	in := [][]float64{{3, 1, 2}, {4, 1, 3, 2}, {5}, nil}
	// {1,2,3} → 2; {1,2,3,4} → 2 (lower middle); {5} → 5; none → −1.
	want := []float64{2, 2, 5, -1}
	p50 := []float64{stats.Summarize([]float64{3, 1, 2}, stats.Positive).P50, stats.Summarize([]float64{4, 1, 3, 2}, stats.Positive).P50, stats.Summarize([]float64{5}, stats.Positive).P50}
	got := medians(in)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("medians[%d] = %g, want %g", i, got[i], want[i])
		}
		if i < len(p50) && got[i] != p50[i] {
			t.Errorf("medians[%d] = %g, Summarize's p50 %g: two definitions", i, got[i], p50[i])
		}
	}
}

// graphClock is a Compute on a virtual device: each compute op of a
// Program costs cost(i) ms (0.5 ms less on its first run), marks read the device clock, and the decode Program runs op by
// op twice, is captured on its third run (marks untimed, the graph
// launched after its last op) and replayed as one graph from then on,
// which takes graphShare of the ops' op-by-op time (the launch gaps it
// removes). A mark made after an op that an earlier op's graph ran comes
// markPaceMS after the last thing on the device: the host's loop over the
// graph's ops, slower than the graph, which the device would wait for.
type graphClock struct {
	markPaceMS float64
	plan       *partition.Plan
	cost       func(i int) float64
	graphShare float64
	nowMS      float64
	marks      []float64
	ran        map[string]bool
	decodeRuns int // decode Programs begun
	pos        int // compute op of the decode Program in flight
	last       int
	syncs      int
}

func (g *graphClock) decodeOps() []int {
	var idx []int
	for i, op := range g.plan.Program(0, partition.Decode).Ops {
		if _, comm := op.Kind.Comm(); !comm {
			idx = append(idx, i)
		}
	}
	return idx
}

func (g *graphClock) Exec(_ context.Context, op *partition.Op, past int) error {
	idx := g.decodeOps()
	phase := partition.Prefill
	if past >= g.plan.Config.Workload.PromptTokens() {
		phase = partition.Decode
	}
	i := slices.IndexFunc(g.plan.Program(0, phase).Ops, func(o partition.Op) bool { return o.Name == op.Name })
	cost := g.cost(i)
	key := fmt.Sprintf("%s/%d", phase, i)
	if !g.ran[key] {
		cost -= 0.5 // a first run off the others, unevenly: it must not weigh
		g.ran[key] = true
	}
	g.last = 0
	if phase != partition.Decode {
		g.nowMS += cost
		return nil
	}
	if g.pos == 0 {
		g.decodeRuns++
	}
	run := g.decodeRuns
	g.pos++
	end := g.pos == len(idx)
	if end {
		g.pos = 0
	}
	var sum float64
	for _, j := range idx {
		sum += g.cost(j)
	}
	switch {
	case run <= 2:
		g.nowMS += cost
	case run == 3: // captured: nothing runs until the graph launches
		if end {
			g.nowMS += g.graphShare * sum
		}
	default:
		g.last = -1
		if g.pos == 1 {
			g.last = len(idx)
			g.nowMS += g.graphShare * sum
		}
	}
	return nil
}

func (g *graphClock) Mark() error {
	if g.decodeRuns == 3 && g.pos != 0 {
		g.marks = append(g.marks, math.NaN()) // made during the capture
		return nil
	}
	if g.last < 0 {
		g.nowMS += g.markPaceMS
	}
	g.marks = append(g.marks, g.nowMS)
	return nil
}

func (g *graphClock) Marks() ([]float64, error) {
	g.syncs++
	out, first := make([]float64, len(g.marks)), math.NaN()
	for i, m := range g.marks {
		if math.IsNaN(first) && !math.IsNaN(m) {
			first = m
		}
		out[i] = (m - first) / 1e3
	}
	g.marks = nil
	return out, nil
}

func (g *graphClock) LastGraph() int { return g.last }
func (g *graphClock) Buffer(model.Buf, int, int) (Buffer, error) {
	return nil, fmt.Errorf("no buffers")
}
func (g *graphClock) Sync(context.Context) error { g.syncs++; return nil }
func (g *graphClock) AllocatedBytes() int64      { return 0 }
func (g *graphClock) Close() error               { return nil }

// On a device clock, an op's time is between its marks; a replayed graph's
// time is split over its ops by their op-by-op times with each op's first
// (slow) run left out. single-tiny, warm-up 1, measured 2, 3 decode steps
// each: decode runs 1–2 op by op, run 3 captured (untimed), runs 4–9
// replayed and kept. Op i costs 1 + i/100 ms op by op and the graph 0.8 of
// the sum, so op i's split time is 0.8 × (1 + i/100) ms and a decode step
// 0.8 × Σ(1 + i/100) ms; a prefill op is timed as it ran: 1 + i/100 ms.
// Marks after the graph's other ops would each come 0.3 ms later (a host
// slower than the graph): they are not made, so neither the graph's time
// nor the step's holds them.
func TestEmulateSplitsGraphTimeByOpByOpTimes(t *testing.T) {
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cost := func(i int) float64 { return 1 + float64(i)/100 }
	var g *graphClock
	em, err := Emulate(context.Background(), plan, func(p *partition.Plan, r int) (Compute, error) {
		g = &graphClock{plan: p, cost: cost, graphShare: 0.8, markPaceMS: 0.3, ran: map[string]bool{}}
		return g, nil
	}, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if em.Clock != ClockDevice {
		t.Errorf("clock %q", em.Clock)
	}
	idx := g.decodeOps()
	if em.GraphOps[0] != 6*len(idx) {
		t.Errorf("%d graph ops, want 6 × %d", em.GraphOps[0], len(idx))
	}
	var step float64
	for _, i := range idx {
		want := 0.8 * cost(i) * 1e-3
		step += want
		if got := em.Ops.Decode[0][i]; math.Abs(got-want) > 1e-12 {
			t.Errorf("decode op %d: %.12g s, want %.12g s", i, got, want)
		}
	}
	if got := em.Steps.Decode[0]; math.Abs(got-step) > 1e-12 {
		t.Errorf("decode step %.12g s, want %.12g s", got, step)
	}
	for i, got := range em.Ops.Prefill[0] {
		if want := cost(i) * 1e-3; math.Abs(got-want) > 1e-12 {
			t.Errorf("prefill op %d: %.12g s, want %.12g s", i, got, want)
		}
	}
	// One wait per step (Marks) and the backend's check after it (Sync):
	// 3 iterations × 4 steps × 2.
	if g.syncs != 24 {
		t.Errorf("%d waits, want 24", g.syncs)
	}
}

func (g *graphClock) SuspendGraphs(bool) error { return nil }

// The timing note names the clock, the graph-timed ops and the slowest
// rank's median steps: prefill max(2, 3) ms, decode max(0.5, 0.4) ms.
func TestTimingNote(t *testing.T) {
	em := &Emulation{Clock: ClockDevice, GraphOps: []int{3, 4},
		Steps: StepTimes{Prefill: []float64{2e-3, 3e-3}, Decode: []float64{0.5e-3, 0.4e-3}}}
	n := em.TimingNote()
	for _, want := range []string{"on the device", "7 decode ops", "prefill 3.000 ms, decode step 0.500 ms"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	if n := (&Emulation{Clock: ClockHost}).TimingNote(); !strings.Contains(n, "host clock") {
		t.Errorf("host note %q", n)
	}
}
