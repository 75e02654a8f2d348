package serving

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/model"
)

// drive runs reqs (all present at the start) through one scheduler whose
// iterations ex runs, with no clock, and returns each request's tokens in
// order, the iterations run and the preemptions.
func drive(t *testing.T, ex *PassExecutor, cfg SchedulerConfig, reqs []Request) ([][]int, int, int) {
	t.Helper()
	sched, err := NewScheduler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sched.Released = ex.Released
	seqs := make([]Seq, len(reqs))
	for i, r := range reqs {
		seqs[i] = Seq{Req: r, Slot: i}
		if err := sched.Add(&seqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	toks := make([][]int, len(reqs))
	n := 0
	for !sched.Idle() {
		batch := sched.Schedule()
		if len(batch) == 0 {
			t.Fatalf("nothing scheduled with %d waiting, %d running", sched.Waiting(), sched.Running())
		}
		if err := ex.Run(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		n++
		sched.Complete(func(seq *Seq, done bool) { toks[seq.Slot] = append(toks[seq.Slot], ex.Token(seq)) })
	}
	if ex.FreeSlots() != ex.Slots() {
		t.Errorf("%d of %d slots free after the run", ex.FreeSlots(), ex.Slots())
	}
	return toks, n, sched.Preemptions()
}

// The batched engine (one pass over all of an iteration's rows) makes the
// same tokens as the per-sequence path (each sequence's own Plan.Pass, the
// Program's pass unchanged), under chunked prefill with mixed prefill and
// decode rows, under continuous batching, and with preemptions by
// recompute (a KV cache of 40 one-token blocks for four 6 + 12-token
// requests: 72 tokens wanted), and with an iteration of more tokens than
// the batch's rows. Both drive the same scheduler, so they take
// the same slots and feed the same seeded tokens; only the grouping of
// rows into GEMMs differs. The tokens are argmaxes over the tiny model's
// vocabulary, so a row that went to the wrong sequence, position or slot
// changes them (the test checks that they are not all alike).
func TestBatchedMatchesPerSequence(t *testing.T) {
	reqs := []Request{{ID: 0, InputLen: 9, OutputLen: 5}, {ID: 1, InputLen: 3, OutputLen: 7}, {ID: 2, InputLen: 14, OutputLen: 2}, {ID: 3, InputLen: 6, OutputLen: 6}}
	pre := make([]Request, 4)
	for i := range pre {
		pre[i] = Request{ID: i, InputLen: 6, OutputLen: 12}
	}
	for _, tc := range []struct {
		name string
		cfg  SchedulerConfig
		reqs []Request
	}{
		{"chunked", SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 1, NumBlocks: 96}, reqs},
		{"continuous", SchedulerConfig{Policy: PolicyContinuous, MaxNumSeqs: 4, MaxNumBatchedTokens: 16, BlockSize: 1, NumBlocks: 96}, reqs},
		{"preempting", SchedulerConfig{Policy: PolicyContinuous, MaxNumSeqs: 4, MaxNumBatchedTokens: 18, BlockSize: 1, NumBlocks: 40}, pre},
		// 20 + 18 + 16 + 3 prompt tokens in the first iteration: over the
		// 24 rows of a slot, so it runs as passes of 20, 18 and 16 + 3 rows.
		{"split", SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 4, MaxNumBatchedTokens: 64, BlockSize: 1, NumBlocks: 96},
			[]Request{{ID: 0, InputLen: 20, OutputLen: 4}, {ID: 1, InputLen: 18, OutputLen: 5}, {ID: 2, InputLen: 16, OutputLen: 6}, {ID: 3, InputLen: 3, OutputLen: 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, batched := tinyEngineMode(t, 4, 24, false)
			_, single := tinyEngineMode(t, 4, 24, true)
			got, iters, preempted := drive(t, batched, tc.cfg, tc.reqs)
			want, _, _ := drive(t, single, tc.cfg, tc.reqs)
			distinct := map[int]bool{}
			for i := range tc.reqs {
				if len(got[i]) != tc.reqs[i].OutputLen || fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
					t.Errorf("request %d: batched %v, per sequence %v (%d tokens)", i, got[i], want[i], tc.reqs[i].OutputLen)
				}
				for _, x := range got[i] {
					distinct[x] = true
				}
			}
			if len(distinct) < 3 || distinct[-1] {
				t.Errorf("tokens %v: want argmax ids, not all alike", got)
			}
			if (tc.name == "preempting") != (preempted > 0) {
				t.Errorf("%d preemptions", preempted)
			}
			if iters >= sumOutput(tc.reqs) {
				t.Errorf("%d iterations for %d tokens: not batched", iters, sumOutput(tc.reqs))
			}
		})
	}
}

func sumOutput(reqs []Request) int {
	n := 0
	for _, r := range reqs {
		n += r.OutputLen
	}
	return n
}

// The comparison carries goodput when both sides were measured under an
// SLO: modeled 10 req/s against measured 8 is an error of (10 − 8) / 8 =
// +25 %; without an SLO (NaN) the row is left out.
func TestCompareMetricsGoodput(t *testing.T) {
	find := func(es []MetricError) *MetricError {
		for i := range es {
			if es[i].Key == "request_goodput" {
				return &es[i]
			}
		}
		return nil
	}
	e := find(CompareMetrics(Metrics{RequestGoodput: 10}, Metrics{RequestGoodput: 8}))
	if e == nil || e.Modeled != 10 || e.Measured != 8 || e.RelErr != 0.25 {
		t.Errorf("goodput row %+v, want 10 / 8, +0.25", e)
	}
	if e := find(CompareMetrics(Metrics{RequestGoodput: math.NaN()}, Metrics{RequestGoodput: math.NaN()})); e != nil {
		t.Errorf("a goodput row without an SLO: %+v", e)
	}
}

// deviceBuffers is a compute whose buffers the host cannot address (as
// exec/cuda's): the engine must fall back to per-sequence passes.
type deviceBuffers struct{ pexec.Compute }

type opaque struct{ pexec.Buffer }

func (d deviceBuffers) Buffer(b model.Buf, mb, elems int) (pexec.Buffer, error) {
	v, err := d.Compute.Buffer(b, mb, elems)
	return opaque{v}, err
}

func (d deviceBuffers) Sampled(mb int) []int {
	return d.Compute.(interface{ Sampled(int) []int }).Sampled(mb)
}

// On a backend with device buffers and no row copy the engine runs per
// sequence, says why, and makes the batched engine's tokens.
func TestDeviceBuffersFallBackToPerSequence(t *testing.T) {
	plan, batched := tinyEngine(t, 4, 24)
	c, err := cpu.New(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := newPassExecutor(plan, deviceBuffers{c}, "fake-device", false)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if ex.Batched() || !strings.Contains(ex.Mode(), "backend fake-device keeps device buffers") {
		t.Fatalf("mode %q", ex.Mode())
	}
	cfg := SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 1, NumBlocks: 96}
	reqs := []Request{{ID: 0, InputLen: 9, OutputLen: 5}, {ID: 1, InputLen: 3, OutputLen: 7}}
	got, _, _ := drive(t, ex, cfg, reqs)
	want, _, _ := drive(t, batched, cfg, reqs)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("per sequence on device buffers %v, batched %v", got, want)
	}
}

// The engine's cached passes (built once at position 0, attention moved
// to the sequence's position when run) are partition's passes at that
// position, op for op: the plan builds them anew for every (slot, q,
// past, sample) below, and the cache serves the second asking of each
// from memory.
func TestPassCacheIsThePlansPass(t *testing.T) {
	plan, ex := tinyEngine(t, 4, 24)
	for round := range 2 {
		for _, c := range []struct {
			mb, q, past int
			sample      bool
		}{{0, 1, 5, true}, {1, 1, 17, true}, {2, 8, 0, false}, {2, 8, 8, true}, {ex.batchMB, 12, 0, false}, {3, 1, 0, true}} {
			want := plan.Pass(0, phaseOf(c.q), c.mb, 1, c.q, c.past, c.sample)
			got := ex.pass(c.mb, c.q, c.sample)
			if len(got) != len(want) {
				t.Fatalf("round %d %+v: %d ops, the plan's pass %d", round, c, len(got), len(want))
			}
			for i := range want {
				if g := atPast(&got[i], c.past); !reflect.DeepEqual(*g, want[i]) {
					t.Errorf("round %d %+v: op %d is %+v, the plan's %+v", round, c, i, *g, want[i])
				}
			}
		}
	}
	if n := len(ex.passes.m); n != 6 {
		t.Errorf("%d passes cached, want the 6 distinct (slot, q, sample) asked", n)
	}
}
