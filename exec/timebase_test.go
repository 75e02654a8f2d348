package exec_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/exec/tcpcomm"
	"github.com/partbench/partbench/partition"
)

// freeAddr is a loopback address whose port was free a moment ago, for a
// run's rendezvous.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Two stages, two measured iterations, every time on rank 0's clock.
// Iteration 0: stage 0 starts at 10.000 s; the last stage starts 3 ms late
// at 10.003 and ends its prefill 2 ms after its own start, its decode steps
// at 3 and 4.5 ms. From the earliest start: TTFT = 10.003 + 0.002 − 10.000
// = 5 ms (its own start says 2 ms), steps end at 6 and 7.5 ms, TPOT 1 and
// 1.5 ms, TPS = batch 4 × 2 steps / (7.5 − 5 ms) = 3200 tok/s.
// Iteration 1: the last stage starts first (20.000), stage 0 at 20.002;
// the last stage's prefill ends 6 ms after its start (it waited for stage
// 0): TTFT 6 ms both ways; steps at 7 and 8 ms → TPOT 1, 1 ms, TPS 4000.
// The starts' spread: 3 and 2 ms, median (the lower middle) 2 ms.
func TestAggregateFromOneStart(t *testing.T) {
	same := &pexec.ClockSync{SameHost: true}
	results := []pexec.RankResult{
		{Rank: 0, Stage: 0, StartS: []float64{10.000, 20.002}, PrefillS: []float64{0.004, 0.004},
			StepEndS: [][]float64{{0.005, 0.006}, {0.005, 0.006}}, Clock: same},
		{Rank: 1, Stage: 1, LastStage: true, StartS: []float64{10.003, 20.000}, PrefillS: []float64{0.002, 0.006},
			StepEndS: [][]float64{{0.003, 0.0045}, {0.007, 0.008}}, Clock: &pexec.ClockSync{SameHost: true}},
	}
	m, err := pexec.Aggregate(results, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.TTFT.N != 2 || !near(m.TTFT.Min, 0.005) || !near(m.TTFT.Max, 0.006) {
		t.Errorf("TTFT %+v, want 5 and 6 ms", m.TTFT)
	}
	if o := m.TTFTOwnStart; o == nil || !near(o.Min, 0.002) || !near(o.Max, 0.006) {
		t.Errorf("TTFT from the last stage's own start %+v, want 2 and 6 ms", o)
	}
	if m.TPOT.N != 4 || !near(m.TPOT.Min, 0.001) || !near(m.TPOT.Max, 0.0015) || !near(m.TPOT.Mean, 0.0045/4) {
		t.Errorf("TPOT %+v, want 1, 1.5, 1, 1 ms", m.TPOT)
	}
	if !near(m.TPS.Min, 3200) || !near(m.TPS.Max, 4000) {
		t.Errorf("TPS %+v, want 3200 and 4000", m.TPS)
	}
	// Each rank's late start: rank 0 at 10.000 − 10.000 = 0 and 20.002 −
	// 20.000 = 2 ms, rank 1 at 3 ms and 0.
	for _, c := range []struct {
		rank int
		want []float64
	}{{0, []float64{0, 0.002}}, {1, []float64{0.003, 0}}} {
		if g := results[c.rank].StartLagS; len(g) != 2 || !near(g[0], c.want[0]) || !near(g[1], c.want[1]) {
			t.Errorf("rank %d's start lag %v, want %v", c.rank, g, c.want)
		}
	}
	tb := m.TimeBase
	if !tb.OneStart || !tb.SameHost || !near(tb.StartSpreadS, 0.002) || !strings.Contains(tb.Note, "earliest start over all ranks") ||
		!strings.Contains(tb.Note, "all 2 ranks on rank 0's host") || !strings.Contains(tb.Note, "spread by 2000.0 µs") {
		t.Errorf("time base %+v", tb)
	}

	// A rank on another host: its offset's bound is in the note, twice for TTFT.
	results[1].Clock = &pexec.ClockSync{ClockEstimate: rendezvous.ClockEstimate{OffsetS: 0.2, UncertaintyS: 50e-6, RTTS: 100e-6, Pings: 8}, AppliedS: 0.2}
	if m, err = pexec.Aggregate(results, 4, 0); err != nil {
		t.Fatal(err)
	}
	if tb := m.TimeBase; tb.SameHost || !near(tb.OffsetUncertaintyS, 50e-6) ||
		!strings.Contains(tb.Note, "1 ranks on other hosts") || !strings.Contains(tb.Note, "within ±50.0 µs, so TTFT within ±100.0 µs") {
		t.Errorf("time base with another host %+v", tb)
	}

	// Without starts (older results) each rank's own start: TTFT 2 and 6 ms.
	for i := range results {
		results[i].StartS = nil
	}
	if m, err = pexec.Aggregate(results, 4, 0); err != nil {
		t.Fatal(err)
	}
	if results[1].StartLagS != nil {
		t.Errorf("without starts: start lag %v, want none", results[1].StartLagS)
	}
	if m.TimeBase.OneStart || m.TTFTOwnStart != nil || !near(m.TTFT.Min, 0.002) || !near(m.TTFT.Max, 0.006) || !strings.Contains(m.TimeBase.Note, "own start") {
		t.Errorf("without starts: TTFT %+v, time base %+v", m.TTFT, m.TimeBase)
	}
}

// runTiny runs the tiny model split by tp and pp (two ranks) as goroutines
// through exec.Run (rendezvous, TCP communicator, CPU backend), warmup 1
// and iterations measured, set sets the rest of each rank's options; it
// returns rank 0's results and the config.
func runTiny(t *testing.T, tp, pp, iterations int, set func(o *pexec.RunOptions)) ([]pexec.RankResult, *configs.Config) {
	t.Helper()
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name = fmt.Sprintf("tp%dpp%d-tiny", tp, pp)
	cfg.Parallel.TP, cfg.Parallel.PP, cfg.Topology.GPUsPerNode = tp, pp, tp*pp
	cfg.Run.Warmup, cfg.Run.Iterations = 1, iterations
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results := make([][]pexec.RankResult, plan.Size())
	errs := make([]error, plan.Size())
	var wg sync.WaitGroup
	for r := range plan.Size() {
		env := launch.Env{Rank: r, Size: plan.Size(), LocalRank: r, LocalSize: plan.Size(), Source: launch.SourceRankEnv, RendezvousAddr: addr}
		o := pexec.RunOptions{Plan: plan, Env: env, Backend: "cpu", JoinTimeout: 20 * time.Second,
			NewCompute: func(p *partition.Plan, rank int) (pexec.Compute, error) { return cpu.New(p, rank) },
			NewComm: func(ctx context.Context, sess *rendezvous.Session, p *partition.Plan, rank int, _ pexec.Compute) (pexec.Comm, error) {
				return tcpcomm.New(ctx, sess, rank, p.Size(), "127.0.0.1")
			}}
		set(&o)
		wg.Go(func() { results[r], errs[r] = pexec.Run(ctx, o) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return results[0], cfg
}

// runPP2Delayed runs a two-stage pipeline of the tiny model (runTiny), the
// given rank leaving every measured iteration's barrier delay late; it
// returns rank 0's aggregate.
func runPP2Delayed(t *testing.T, late int, delay time.Duration) *pexec.Measurement {
	t.Helper()
	results, cfg := runTiny(t, 1, 2, 3, func(o *pexec.RunOptions) {
		o.AfterBarrier = func(rank, it int) {
			if rank == late && it >= 1 { // the measured iterations (warmup 1)
				time.Sleep(delay)
			}
		}
	})
	for _, res := range results {
		if len(res.StartS) != cfg.Run.Iterations || res.Clock == nil || !res.Clock.SameHost || res.Clock.AppliedS != 0 {
			t.Fatalf("rank %d: %d starts, clock %+v; want %d, on rank 0's host, no offset applied", res.Rank, len(res.StartS), res.Clock, cfg.Run.Iterations)
		}
	}
	m, err := pexec.Aggregate(results, cfg.Workload.Batch, cfg.Run.Warmup)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A stage that leaves the barrier late, in a real two-rank run. The tiny
// prefill takes about a millisecond per stage, far below the delay D:
//   - the last stage late by D: stage 0's activations wait for it, it
//     computes its half on arrival, so from its own start TTFT ≈ its own
//     prefill (≪ D), while from the earliest start — stage 0's, on time —
//     TTFT ≈ D + that prefill;
//   - the first stage late by D: the last stage, on time, waits D for the
//     activations, so both ways TTFT ≈ D + both prefills.
//
// Half of D is the line (a scheduler would have to hold a rank back by D/2
// to cross it); the median over the three iterations is held against it.
func TestRunTTFTFromEarliestStart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two ranks with delays")
	}
	const delay = 200 * time.Millisecond
	half := (delay / 2).Seconds()
	t.Run("last stage late", func(t *testing.T) {
		m := runPP2Delayed(t, 1, delay)
		if !m.TimeBase.OneStart || m.TTFTOwnStart == nil {
			t.Fatalf("not timed from one start: %+v", m.TimeBase)
		}
		if m.TTFT.P50 < half || m.TTFTOwnStart.P50 >= half || m.TimeBase.StartSpreadS < half {
			t.Errorf("TTFT p50 %.4f s from the earliest start (want ≥ %.2f), %.4f s from the last stage's own (want < %.2f); starts spread %.4f s",
				m.TTFT.P50, half, m.TTFTOwnStart.P50, half, m.TimeBase.StartSpreadS)
		}
	})
	t.Run("first stage late", func(t *testing.T) {
		m := runPP2Delayed(t, 0, delay)
		if m.TTFTOwnStart == nil || m.TTFT.P50 < half || m.TTFTOwnStart.P50 < half {
			t.Errorf("TTFT p50 %.4f s from the earliest start, %+v from the last stage's own; want both ≥ %.2f", m.TTFT.P50, m.TTFTOwnStart, half)
		}
	})
}
