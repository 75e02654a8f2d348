package calib

import (
	"context"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// chanP2P is rank me's end of an in-process token channel between every
// ordered pair of ranks.
type chanP2P struct {
	me    int
	links map[[2]int]chan struct{}
}

func (c chanP2P) Send(_ context.Context, _ pexec.Buffer, peer int) error {
	c.links[[2]int{c.me, peer}] <- struct{}{}
	return nil
}

func (c chanP2P) Recv(_ context.Context, _ pexec.Buffer, peer int) error {
	<-c.links[[2]int{peer, c.me}]
	return nil
}

// Three ranks of a turnRing, four passes each, twice (two (config, rank)s,
// end between): one rank holds the turn at a time, and the turns go
// 0, 1, 2, 0, 1, 2, … — 12 per (config, rank), 24 in all — with no token
// left in flight after end.
func TestTurnRingOneAtATime(t *testing.T) {
	const n, passes = 3, 4
	links := map[[2]int]chan struct{}{}
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			links[[2]int{a, b}] = make(chan struct{}, 1)
		}
	}
	var mu sync.Mutex
	var order []int
	holding := 0
	var overlap bool
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ring := newTurnRing(context.Background(), chanP2P{r, links}, r, n)
			for round := 0; round < 2; round++ {
				for p := 0; p < passes; p++ {
					if err := ring.await(); err != nil {
						errs[r] = err
						return
					}
					mu.Lock()
					holding++
					overlap = overlap || holding > 1
					order = append(order, r)
					mu.Unlock()
					runtime.Gosched() // hold the turn while the others run
					mu.Lock()
					holding--
					mu.Unlock()
					if err := ring.handOn(); err != nil {
						errs[r] = err
						return
					}
				}
				if err := ring.end(); err != nil {
					errs[r] = err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a ring that loses its token waits for ever
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the ranks did not finish their turns in 10 s (turns so far: %v)", order)
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if overlap {
		t.Error("two ranks held the turn at once")
	}
	if len(order) != 2*n*passes {
		t.Fatalf("%d turns, want %d: %v", len(order), 2*n*passes, order)
	}
	for i, r := range order {
		if r != i%n {
			t.Fatalf("turn %d went to rank %d, want %d: %v", i, r, i%n, order)
		}
	}
	for k, ch := range links {
		if len(ch) != 0 {
			t.Errorf("a token left in flight from rank %d to %d", k[0], k[1])
		}
	}
}

// Three process ranks take turns over single-tiny's Programs: every
// compute op has an entry taken in turns (kind turns:<kind>, looked up by
// that kind), measured at 3 ranks, with at least one sample of each rank
// in each of the 2 iterations, and the profile's validation accepts them;
// and the hand-offs between their turns, their order and every turn's
// time off the core are read.
func TestMeasureOpTimesProcsTurns(t *testing.T) {
	ts, stretches, tm, err := measureOpTimesProcsHops(context.Background(), []string{os.Args[0], "-test.run=^$"}, 3, []string{"test/single-tiny"}, 2, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	// The hand-offs between turns: ranks 1 and 2 each receive every turn
	// (single-tiny's one rank: (2 iterations + the warm-up) × its passes),
	// none read before its hand-on.
	hops := tm.hops
	n := 0
	for _, b := range hops {
		n += b.N
		if b.N < 1 || !(b.MedS >= 0) || !(b.PassS >= 0) {
			t.Errorf("hand-off band %+v", b)
		}
	}
	if n < 2*3 {
		t.Errorf("%d hand-offs between turns (%+v), want ≥ 6", n, hops)
	}
	// Every hand-off read its Send call's return too (the same pairs).
	if o := tm.order; o.N != n || o.ReceiverFirst < 0 || o.ReceiverFirst > o.N || !(o.CallS >= 0) || !(o.CallMeanS >= 0) {
		t.Errorf("hand-on order %+v, want %d hand-ons", o, n)
	}
	// Every turn of the 3 ranks (≥ 3 each) read its time off the core
	// (Linux gives a thread's CPU time), none below 0.
	turns := 0
	for _, b := range tm.off {
		turns += b.N
		if b.N < 1 || !(b.PassS > 0) || !(b.MedS >= 0) || !(b.MeanS >= 0) {
			t.Errorf("time-off band %+v", b)
		}
	}
	if _, ok := threadCPU(); ok && turns < 3*3 {
		t.Errorf("%d turns with their time off the core (%+v), want ≥ 9", turns, tm.off)
	}
	for i, s := range stretches {
		if s != 0 {
			t.Errorf("rank %d: stretch %g, want 0 (not measured taking turns)", i, s)
		}
	}
	tab, plan := opTableOnSingleTiny(t, ts)
	for _, op := range plan.Program(0, partition.Prefill).Ops {
		kind, shape, size, context := sim.OpKey(&op)
		if _, ok := tab.Lookup(configs.TurnsKind(kind), shape, size, context); !ok {
			t.Errorf("prefill %s (%s): no entry taken in turns", op.Name, op.Kind)
		}
	}
	for _, e := range ts {
		if !strings.HasPrefix(e.Kind, configs.TurnsKindPrefix) || e.Ranks != 3 || e.Samples < 6 { // 2 iterations × 3 ranks
			t.Fatalf("entry %+v: want kind turns:…, ranks 3 and ≥ 6 samples", e)
		}
	}
}
