package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// coresPlan is config name's Plan on a host of cores cores, times its
// op-time table (nil: none) and edit (nil: none) applied to the config.
func coresPlan(t *testing.T, name string, cores int, times []configs.OpTime, edit func(*configs.Config)) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Hardware.HostCores = cores
	cfg.Hardware.OpTimes = times
	if edit != nil {
		edit(cfg)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func opEntry(kind, shape string, size, context int64, s float64, ranks int) configs.OpTime {
	return configs.OpTime{Kind: kind, Shape: shape, Size: size, Context: context, TimeS: s, TimeMinS: s, TimeMaxS: s, Samples: 1, Ranks: ranks}
}

// TestComputeTimeTurns: pp4-tiny's first decode GEMM on a 2-core host (4
// ranks: fair share n/C = 2 with all computing), 10 µs measured at once
// and 16 µs taking turns; t = 10 + (16 − 10)·cold·(1 − share):
//
//	over (max(1, b/C))   share = clamp((over − 1)/(2 − 1), 0, 1)   cold   t
//	1                    0                                         1      16 µs
//	1.5                  0.5                                       1      13 µs
//	2                    1                                         1      10 µs
//	3                    1                                         1      10 µs
//	1                    0                                         0      10 µs
//	1                    0                                         0.5    13 µs
//	1.5                  0.5                                       0.5    11.5 µs
//
// and the entry at once wherever the ranks do not outnumber the cores (no
// host cores; 4 cores), the one in turns where the table has no other.
func TestComputeTimeTurns(t *testing.T) {
	plan := coresPlan(t, "test/pp4-tiny", 2, nil, nil)
	var op *partition.Op
	prog := plan.Program(0, partition.Decode)
	for i := range prog.Ops {
		if prog.Ops[i].Kind == partition.Gemm {
			op = &prog.Ops[i]
			break
		}
	}
	if op == nil {
		t.Fatal("pp4-tiny rank 0 decodes no GEMM")
	}
	kind, shape, size, context := OpKey(op)
	once, turns := opEntry(kind, shape, size, context, 10e-6, 4), opEntry(configs.TurnsKind(kind), shape, size, context, 16e-6, 4)
	both := NewOpTable([]configs.OpTime{once, turns})
	for _, c := range []struct{ over, cold, want float64 }{
		{1, 1, 16e-6}, {1.5, 1, 13e-6}, {2, 1, 10e-6}, {3, 1, 10e-6},
		{1, 0, 10e-6}, {1, 0.5, 13e-6}, {1.5, 0.5, 11.5e-6},
	} {
		if got, ok := both.computeTime(plan, op, c.over, c.cold); !ok || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("fair share %g, cold %g: %g s (ok %t), want %g s", c.over, c.cold, got, ok, c.want)
		}
	}
	for _, c := range []struct {
		name  string
		cores int
		tab   *OpTable
		want  float64
	}{
		{"no host cores", 0, both, 10e-6},
		{"4 ranks on 4 cores", 4, both, 10e-6},
		{"at once only", 2, NewOpTable([]configs.OpTime{once}), 10e-6},
		{"in turns only", 2, NewOpTable([]configs.OpTime{turns}), 16e-6},
	} {
		p := coresPlan(t, "test/pp4-tiny", c.cores, nil, nil)
		if got, ok := c.tab.computeTime(p, op, 1, 1); !ok || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%s: %g s (ok %t), want %g s", c.name, got, ok, c.want)
		}
	}
	if _, ok := NewOpTable(nil).computeTime(plan, op, 1, 1); ok {
		t.Error("an empty table prices the op")
	}
}

// flatTable is an op time of once seconds for every compute op of name's
// Programs at every size and context (entries at both ends of each axis,
// log–log between equal times: the same time everywhere), and with turns
// > 0 the same entries taken in turns at turns seconds; all at 4 ranks.
func flatTable(t *testing.T, name string, once, turns float64, edit func(*configs.Config)) []configs.OpTime {
	t.Helper()
	plan := coresPlan(t, name, 0, nil, edit)
	type ks struct{ kind, shape string }
	seen := map[ks]bool{}
	var out []configs.OpTime
	for r := range plan.Ranks {
		for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
			prog := plan.Program(r, ph)
			for i := range prog.Ops {
				op := &prog.Ops[i]
				if !isCompute(op.Kind) {
					continue
				}
				kind, shape, _, context := OpKey(op)
				if seen[ks{kind, shape}] {
					continue
				}
				seen[ks{kind, shape}] = true
				ctxs := []int64{0}
				if context > 0 {
					ctxs = []int64{1, 1 << 20}
				}
				for _, sz := range []int64{1, 1 << 20} {
					for _, c := range ctxs {
						out = append(out, opEntry(kind, shape, sz, c, once, 4))
						if turns > 0 {
							out = append(out, opEntry(configs.TurnsKind(kind), shape, sz, c, turns, 4))
						}
					}
				}
			}
		}
	}
	return out
}

// TestEstimateTurns: every compute op 3 µs at once, 7 µs in turns, on a
// 2-core host.
//
// pp4-tiny with one micro-batch: its stages compute one at a time (fair
// share 1 at every op), so every compute op is priced in turns: each
// compute slice lasts exactly 7 − 3 = 4 µs longer than with the entries
// at once alone (its host step cost the same in both), every send the
// same length (a receive waits for the longer compute upstream).
//
// tp4-tiny: its 4 ranks compute together (fair share 4/2 = 2 = n/C at
// every op), so every op is priced at once: TTFT and TPOT as without the
// entries in turns.
func TestEstimateTurns(t *testing.T) {
	one := func(c *configs.Config) { c.Parallel.Microbatches = 1 }
	pp := func(turns float64) *Estimate {
		e, err := EstimatePlan(coresPlan(t, "test/pp4-tiny", 2, flatTable(t, "test/pp4-tiny", 3e-6, turns, one), one), Options{EveryRank: true})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b := pp(0), pp(7e-6)
	as, bs := a.Timeline.List(), b.Timeline.List()
	if len(as) != len(bs) || len(as) == 0 {
		t.Fatalf("%d slices at once, %d with turns", len(as), len(bs))
	}
	n := 0
	for i := range as {
		sa, sb := &as[i], &bs[i]
		want := 0.0
		switch {
		case sa.Op.Kind == partition.Recv:
			continue // waits for the upstream stages' compute: longer
		case isCompute(sa.Op.Kind):
			want, n = 4e-6, n+1
		}
		if d := (sb.EndS - sb.StartS) - (sa.EndS - sa.StartS); math.Abs(d-want) > 1e-12 {
			t.Errorf("rank %d %s %s: %.6g s longer in turns, want %.6g s", sa.Rank, sa.Phase, sa.Op.Name, d, want)
		}
	}
	if n == 0 {
		t.Fatal("no compute slice")
	}
	if !(b.Decode.TPOTS > a.Decode.TPOTS) {
		t.Errorf("pp4-tiny TPOT %g s in turns, %g s at once: want longer", b.Decode.TPOTS, a.Decode.TPOTS)
	}
	tp := func(turns float64) *Estimate {
		return estimateOnCores(t, "test/tp4-tiny", 2, flatTable(t, "test/tp4-tiny", 3e-6, turns, nil)...)
	}
	x, y := tp(0), tp(7e-6)
	if x.Prefill.TTFTS != y.Prefill.TTFTS || x.Decode.TPOTS != y.Decode.TPOTS {
		t.Errorf("tp4-tiny: TTFT %g / TPOT %g s with turns, %g / %g s without; want the same (all ranks compute at once)", y.Prefill.TTFTS, y.Decode.TPOTS, x.Prefill.TTFTS, x.Decode.TPOTS)
	}
}

// TestColdBursts: one rank's slices in time order, prefill then decode
// step 1:
//
//	prefill: gemm a (the Program's start: cold), recv r1 waited 5 µs,
//	         gemm b (cold), send, gemm c (a send goes on: cold),
//	         all_reduce with no wait, gemm d (warm)
//	decode:  gemm e (the step goes on from the rank's own step: warm),
//	         recv whose message was there, gemm f (warm), all_reduce that
//	         waited 1 µs, gemm g (cold)
func TestColdBursts(t *testing.T) {
	op := func(name string, k partition.Kind) *partition.Op { return &partition.Op{Name: name, Kind: k} }
	type s struct {
		op    *partition.Op
		phase partition.Phase
		step  int
		waitS float64
	}
	seq := []s{
		{op("a", partition.Gemm), partition.Prefill, -1, 0},
		{op("r1", partition.Recv), partition.Prefill, -1, 5e-6},
		{op("b", partition.Gemm), partition.Prefill, -1, 0},
		{op("s1", partition.Send), partition.Prefill, -1, 0},
		{op("c", partition.Gemm), partition.Prefill, -1, 0},
		{op("ar1", partition.AllReduce), partition.Prefill, -1, 0},
		{op("d", partition.Gemm), partition.Prefill, -1, 0},
		{op("e", partition.Gemm), partition.Decode, 1, 0},
		{op("r2", partition.Recv), partition.Decode, 1, 0},
		{op("f", partition.Gemm), partition.Decode, 1, 0},
		{op("ar2", partition.AllReduce), partition.Decode, 1, 1e-6},
		{op("g", partition.Gemm), partition.Decode, 1, 0},
	}
	tl := &Timeline{Ranks: 1}
	for i, x := range seq {
		tl.Slices = append(tl.Slices, Slice{Rank: 0, Phase: x.phase, Step: x.step, Op: x.op, StartS: float64(i) * 1e-5, EndS: float64(i)*1e-5 + 1e-6, WaitS: x.waitS})
	}
	want := map[string]bool{"a": true, "b": true, "c": true, "d": false, "e": false, "f": false, "g": true}
	got := coldBursts(tl)
	for i, sl := range tl.Slices {
		w, compute := want[sl.Op.Name]
		if c, ok := got[i]; ok != compute || c != w {
			t.Errorf("%s: cold %t (marked %t), want %t (marked %t)", sl.Op.Name, c, ok, w, compute)
		}
	}
}
