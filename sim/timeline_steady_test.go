package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// steadyCases are the golden test's configs and more pipelines and
// replicas: deep pipelines with more and fewer micro-batches than stages,
// an uneven layer map, a chunked prefill, replicas, and the 100,000-GPU
// dry run.
func steadyCases(t *testing.T) []struct {
	label string
	plan  *partition.Plan
	opts  Options
} {
	var out []struct {
		label string
		plan  *partition.Plan
		opts  Options
	}
	add := func(label string, p *partition.Plan, o Options) {
		out = append(out, struct {
			label string
			plan  *partition.Plan
			opts  Options
		}{label, p, o})
	}
	for i, c := range goldenCases() {
		p := planEdited(t, c.name, c.edit)
		add(goldenLabel(i, c, p), p, c.opts)
	}
	for _, e := range []struct {
		name string
		edit func(*configs.Config)
	}{
		{"layerwise16", func(c *configs.Config) { c.Parallel.Microbatches = 4 }},  // 16 stages, 4 micro-batches
		{"layerwise16", func(c *configs.Config) { c.Parallel.Microbatches = 32 }}, // more micro-batches than stages
		{"tp8pp2", func(c *configs.Config) { // 8 stages of TP 2, 4 micro-batches, 2 replicas
			c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches, c.Parallel.DP = 2, 8, 4, 2
			c.Topology.Nodes = 4
		}},
		{"tp8pp2", func(c *configs.Config) { c.Parallel.LayerMap = layerMap16(); c.Parallel.Microbatches = 2 }}, // unbalanced 12 + 4
	} {
		p := planEdited(t, e.name, e.edit)
		add(fmt.Sprintf("%s (tp %d pp %d dp %d, %d micro-batches)", e.name, p.TP, p.PP, p.DP, p.Microbatches), p, Options{})
	}
	add("100,000 GPUs", largePlan(t), Options{})
	return out
}

// The estimate with the steady state extrapolated equals the estimate that
// simulates every decode step within steadyRelTol, number for number
// (everything else in its JSON equal), and so do its timeline's slices:
// the same ops in the same order, times within the tolerance, sends and
// recvs paired alike. On most configs the steady state must be found early
// (else the test would compare the reference with itself).
func TestSteadyStateMatchesStepwise(t *testing.T) {
	if testing.Short() {
		t.Skip("estimates every preset twice")
	}
	cases := steadyCases(t)
	if len(cases) < 12 {
		t.Fatalf("%d configs, want at least 12", len(cases))
	}
	settled, worst, worstAt := 0, 0.0, ""
	for _, c := range cases {
		ref := c.opts
		ref.stepwise = true
		want, err := EstimatePlan(c.plan, ref)
		if err != nil {
			t.Fatalf("%s: %v", c.label, err)
		}
		got, err := EstimatePlan(c.plan, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.label, err)
		}
		steps := c.opts.DecodeSteps
		if steps == 0 {
			steps = 16
		}
		if s := got.Timeline.settled; s > 0 && s < steps-1 {
			settled++
			t.Logf("%s: settled at decode step %d of %d", c.label, s, steps)
		} else {
			t.Logf("%s: every decode step simulated", c.label)
		}
		if want.Timeline.settled != 0 {
			t.Errorf("%s: the stepwise reference extrapolated from step %d", c.label, want.Timeline.settled)
		}
		d, at := steadyCompareEstimates(t, c.label, got, want)
		if d > worst {
			worst, worstAt = d, c.label+": "+at
		}
		steadyCompareTimelines(t, c.label, got.Timeline, want.Timeline)
	}
	t.Logf("largest relative difference %.3g (%s)", worst, worstAt)
	if settled < len(cases)*3/4 {
		t.Errorf("the steady state was found early in %d of %d configs, want at least 3/4", settled, len(cases))
	}
}

// steadyCompareEstimates compares two estimates' JSON: numbers within
// steadyRelTol of the larger (of their window, for differences of times:
// diffScale), everything else equal. It returns the largest
// relative difference and where.
func steadyCompareEstimates(t *testing.T, label string, got, want *Estimate) (float64, string) {
	t.Helper()
	var a, b any
	for _, x := range []struct {
		e   *Estimate
		out *any
	}{{got, &a}, {want, &b}} {
		data, err := json.Marshal(x.e)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, x.out); err != nil {
			t.Fatal(err)
		}
	}
	worst, worstAt := 0.0, ""
	var walk func(path string, a, b any, scale float64)
	walk = func(path string, a, b any, scale float64) {
		switch av := a.(type) {
		case map[string]any:
			bv, ok := b.(map[string]any)
			if !ok || len(av) != len(bv) {
				t.Errorf("%s: %s: %v, want %v", label, path, a, b)
				return
			}
			keys := make([]string, 0, len(av))
			for k := range av {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(path+"."+k, av[k], bv[k], diffScale(path, k, bv))
			}
		case []any:
			bv, ok := b.([]any)
			if !ok || len(av) != len(bv) {
				t.Errorf("%s: %s: %d items, want %v", label, path, len(av), b)
				return
			}
			for i := range av {
				walk(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], 0)
			}
		case float64:
			bv, ok := b.(float64)
			if !ok {
				t.Errorf("%s: %s: %v, want %v", label, path, a, b)
				return
			}
			d := 0.0
			if av != bv {
				d = math.Abs(av-bv) / math.Max(scale, math.Max(math.Abs(av), math.Abs(bv)))
			}
			if d > worst {
				worst, worstAt = d, path
			}
			if d > steadyRelTol {
				t.Errorf("%s: %s = %.17g, stepwise %.17g (relative difference %.3g > %g)", label, path, av, bv, d, steadyRelTol)
			}
		default:
			if a != b {
				t.Errorf("%s: %s: %v, want %v", label, path, a, b)
			}
		}
	}
	walk("estimate", a, b, 0)
	return worst, worstAt
}

// diffScale is what a number of the estimate's JSON is compared relative
// to, besides its own size, where it is a difference of nearly equal times
// (idle time is a window less the busy time in it): an idle time, the
// rank's whole window (busy + idle); a time by bound, the phase's window
// (the sum over bounds); a bubble fraction, 1 (it is a share of the
// window). Elsewhere 0: the number alone.
func diffScale(path, key string, parent map[string]any) float64 {
	num := func(k string) float64 { f, _ := parent[k].(float64); return math.Abs(f) }
	switch {
	case key == "prefill_idle_s":
		return num("prefill_busy_s") + num(key)
	case key == "decode_idle_s":
		return num("decode_busy_s") + num(key)
	case key == "bubble_fraction":
		return 1
	case strings.HasSuffix(path, ".time_by_bound_s"):
		sum := 0.0
		for k := range parent {
			sum += num(k)
		}
		return sum
	}
	return 0
}

// relDiff is |a − b| / max(|a|, |b|) (0 where both are 0).
func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// steadyCompareTimelines requires the same slices in the same order, times
// within steadyRelTol, and each send paired with the same recv.
func steadyCompareTimelines(t *testing.T, label string, got, want *Timeline) {
	t.Helper()
	gs, ws := got.List(), want.List()
	if len(gs) != len(ws) {
		t.Errorf("%s: %d slices, stepwise %d", label, len(gs), len(ws))
		return
	}
	type at struct {
		rank, step int
		phase      partition.Phase
		op         string
		mb         int
	}
	pairs := func(tl *Timeline) map[at]at {
		sends := map[int]at{}
		out := map[at]at{}
		for _, sl := range tl.All() {
			if sl.Flow != 0 && sl.Op.Kind == partition.Send {
				sends[sl.Flow] = at{sl.Rank, sl.Step, sl.Phase, sl.Op.Name, sl.Op.Microbatch}
			}
		}
		for _, sl := range tl.All() {
			if sl.Flow != 0 && sl.Op.Kind == partition.Recv {
				s, ok := sends[sl.Flow]
				if !ok {
					t.Errorf("%s: rank %d's recv %s (step %d) has flow %d and no send", label, sl.Rank, sl.Op.Name, sl.Step, sl.Flow)
				}
				out[at{sl.Rank, sl.Step, sl.Phase, sl.Op.Name, sl.Op.Microbatch}] = s
			}
		}
		return out
	}
	bad := 0
	for i := range gs {
		g, w := &gs[i], &ws[i]
		if g.Rank != w.Rank || g.Phase != w.Phase || g.Step != w.Step || g.Op.Name != w.Op.Name || g.Op.Microbatch != w.Op.Microbatch ||
			g.Bound != w.Bound || g.Algo != w.Algo || g.Proto != w.Proto || g.Link != w.Link || g.HBMBytes != w.HBMBytes || g.L2Bytes != w.L2Bytes ||
			relDiff(g.StartS, w.StartS) > steadyRelTol || relDiff(g.EndS, w.EndS) > steadyRelTol ||
			math.Abs(g.WaitS-w.WaitS) > steadyRelTol*math.Max(math.Abs(g.EndS), math.Abs(w.EndS)) {
			if bad++; bad <= 3 {
				t.Errorf("%s: slice %d: %+v, stepwise %+v", label, i, *g, *w)
			}
		}
	}
	gp, wp := pairs(got), pairs(want)
	if len(gp) != len(wp) {
		t.Errorf("%s: %d paired recvs, stepwise %d", label, len(gp), len(wp))
	}
	for r, s := range wp {
		if gp[r] != s {
			if bad++; bad <= 3 {
				t.Errorf("%s: recv %+v takes the message of %+v, stepwise %+v", label, r, gp[r], s)
			}
		}
	}
}

// The steady state is recognised only where three steps repeat with one
// shift: a fake two-rank timeline whose steps 1–3 are step 1 moved by
// P = 0.5 s is found settled with P; moving one op of step 2 or 3 by 1e-9
// of the clock (above steadyShiftTol = 1e-11 of it), or one wait, or one
// message's arrival, or only two steps repeating (j = 2), is not.
func TestSteadyShiftRefusesWhatDoesNotRepeat(t *testing.T) {
	dec := []partition.Op{{Kind: partition.Gemm}, {Kind: partition.Send}}
	build := func() *simulator {
		s := &simulator{}
		for ri := 0; ri < 2; ri++ {
			s.ranks = append(s.ranks, &rankState{dec: dec, steps: 4})
		}
		presizeSlices(s)
		for ri, r := range s.ranks {
			for k := 0; k < 4; k++ {
				for i := range dec {
					// op i of rank ri in step k: starts at 0.1·ri + 0.2·i + 0.5·k
					start := 0.1*float64(ri) + 0.2*float64(i) + 0.5*float64(k)
					s.pk.put(s.base[ri]+k*len(r.dec)+i, &Slice{Rank: ri, Phase: partition.Decode, Step: k, Op: &dec[i], StartS: start, EndS: start + 0.15, WaitS: 0.01})
				}
			}
		}
		s.steady = &steady{total: 16, limit: 4, decBase: []int{0, 2}, n: 4}
		for k := 0; k < 4; k++ { // each send's message arrives 0.05 s after it ends
			s.steady.arrive[k%3] = make([]float64, 4)
		}
		for k := 1; k < 4; k++ {
			for ri := range s.ranks {
				s.steady.arrive[k%3][2*ri+1] = s.slot(ri, k*2+1).EndS + 0.05
			}
		}
		return s
	}
	s := build()
	if p, ok := s.steady.shift(s, 3); !ok || math.Abs(p-0.5) > 1e-15 {
		t.Fatalf("shift = %v, %v; want 0.5, true", p, ok)
	}
	if _, ok := s.steady.shift(s, 2); ok {
		t.Errorf("settled from two repeating steps")
	}
	a := build()
	a.steady.arrive[3%3][2*1+1] += 1e-9 * 2 // rank 1's send of step 3 arrives later
	if p, ok := a.steady.shift(a, 3); ok {
		t.Errorf("a message arriving later: settled with P = %v", p)
	}
	for _, tc := range []struct {
		name  string
		index int // into the packed slices
		edit  func(*sliceTimes)
	}{
		{"rank 1's send of step 3 ends later", 1*8 + 3*2 + 1, func(sl *sliceTimes) { sl.EndS += 1e-9 * 2 }},
		{"rank 0's gemm of step 2 starts later", 0*8 + 2*2 + 0, func(sl *sliceTimes) { sl.StartS += 1e-9 * 2 }},
		{"rank 1's gemm of step 3 waits longer", 1*8 + 3*2 + 0, func(sl *sliceTimes) { sl.WaitS += 1e-9 * 2 }},
	} {
		s := build()
		tc.edit(&s.pk.times[tc.index])
		if p, ok := s.steady.shift(s, 3); ok {
			t.Errorf("%s: settled with P = %v", tc.name, p)
		}
	}
}

// ring2 is two ranks passing a token around in every decode step (rank 0
// computes and sends to rank 1, which computes and sends back), 1 ms of
// compute on each, free transfers, for steps decode steps; without the
// send back where unbalanced (rank 0 then waits forever in step 0).
func ring2(steps int, unbalanced bool) *simulator {
	s := pipeline(2, 1, 1e-3)
	act := partition.Op{Kind: partition.Activation, FLOPs: 1e9}
	s.ranks[0].items, s.ranks[1].items = nil, nil
	s.ranks[0].dec = []partition.Op{act, {Kind: partition.Send, Peer: 1}, {Kind: partition.Recv, Peer: 1}}
	s.ranks[1].dec = []partition.Op{{Kind: partition.Recv, Peer: 0}, act, {Kind: partition.Send, Peer: 0}}
	if unbalanced {
		s.ranks[1].dec = s.ranks[1].dec[:2]
	}
	for _, r := range s.ranks {
		r.steps = steps
	}
	s.ids, s.index = []int{0, 1}, []int{0, 1}
	presizeSlices(s)
	return s
}

// A balanced ring settles at step 3 and its extrapolated slices are the
// step-by-step ones: each step is 2 ms (two computes), so step k's ops
// start at 2k ms (rank 0) and 2k + 1 ms (rank 1). Where a channel does not
// balance, or the prefill leaves more than a step's messages on it, the
// steady state is not looked for; and where the ranks stop at
// a step that some cannot reach (here a recv nobody answers), the
// simulation goes on step by step and reports the deadlock as it does.
func TestSteadyRingAndDeadlock(t *testing.T) {
	ref, err := ring2(16, false).run()
	if err != nil {
		t.Fatal(err)
	}
	s := ring2(16, false)
	if s.steady = newSteady(s, 16); s.steady == nil {
		t.Fatal("a balanced ring is not extrapolated")
	}
	got, err := s.run()
	if err != nil {
		t.Fatal(err)
	}
	if got.settled != 3 {
		t.Errorf("settled at step %d, want 3", got.settled)
	}
	refs := ref.List()
	for i, sl := range got.All() {
		want := 2e-3*float64(sl.Step) + 1e-3*float64(sl.Rank)
		if sl.Op.Kind == partition.Recv && sl.Rank == 0 {
			want += 2e-3 // rank 0's recv ends when rank 1's send does, a step's 2 ms after its start
		}
		r := refs[i]
		if sl.Rank != r.Rank || sl.Step != r.Step || relDiff(sl.EndS, r.EndS) > steadyRelTol || relDiff(sl.StartS, r.StartS) > steadyRelTol {
			t.Errorf("slice %d: %+v, stepwise %+v", i, sl, r)
		}
		if sl.Op.Kind == partition.Activation && math.Abs(sl.StartS-want) > 1e-12 {
			t.Errorf("rank %d's compute of step %d starts at %g, want %g", sl.Rank, sl.Step, sl.StartS, want)
		}
	}

	u := ring2(16, true)
	if newSteady(u, 16) != nil {
		t.Error("an unbalanced channel is extrapolated")
	}
	// Two messages left from the prefill on a channel that carries one a
	// step: each step's recv takes a message two steps old.
	c := ring2(16, false)
	c.ranks[1].pre = []partition.Op{{Kind: partition.Send, Peer: 0}, {Kind: partition.Send, Peer: 0}}
	if newSteady(c, 16) != nil {
		t.Error("a channel backed up by more than a step is extrapolated")
	}
	c.ranks[1].pre = c.ranks[1].pre[:1] // one: the token of the prefill, as a pipeline's
	if newSteady(c, 16) == nil {
		t.Error("a channel carrying one step's messages over from the prefill is not extrapolated")
	}
	_, want := ring2(16, true).run()
	v := ring2(16, true)
	v.steady = &steady{total: 16, limit: steadyMinSteps, decBase: []int{0, 3}, n: 5}
	for k := range v.steady.arrive {
		v.steady.arrive[k] = make([]float64, 5)
	}
	for _, r := range v.ranks {
		r.steps = steadyMinSteps
	}
	_, err = v.run()
	if want == nil || err == nil || err.Error() != want.Error() {
		t.Errorf("stopped at a step: %v; step by step: %v", err, want)
	}
}
