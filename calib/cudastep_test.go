package calib

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// syncClock is the CPU backend on a clock that advances 1 ms at every Sync.
type syncClock struct {
	pexec.Compute
	syncs int
}

func (s *syncClock) Sync(ctx context.Context) error {
	s.syncs++
	return s.Compute.Sync(ctx)
}

// Each decode step is one Sync, 1 ms on the clock; its ops' times in a
// table measured on rowClock are their op-time sizes in ns; the graph
// launch is 2 µs. The CPU backend has no device clock, so the step's ops
// count at their table times and nothing is saved: the host's share is
// 1 ms − Σ sizes ns − 2 µs, the same for every step of single-tiny (its
// decode ops' sizes do not change with the cache length), so every
// iteration's median is that, and no iteration gives a saving.
func TestStepOverhead(t *testing.T) {
	plans, err := opPlans([]string{"test/single-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	plan := plans[0]
	newRow := func(p *partition.Plan, rank int) (pexec.Compute, error) {
		c, err := cpu.New(p, rank)
		return &rowClock{Compute: c}, err
	}
	ts, err := measureOpTimes(context.Background(), plans, 1, 1, newRow, nil, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	c, err := cpu.New(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := &syncClock{Compute: c}
	gs, err := measureGraphSteps(context.Background(), plan, sc, sim.NewOpTable(ts), 2e-6, 2, nil,
		func() time.Duration { return time.Duration(sc.syncs) * time.Millisecond })
	decodeOps := len(plan.Program(0, partition.Decode).Ops)
	if err != nil || gs.missing != 0 || gs.ops != decodeOps {
		t.Fatalf("%v, %d ops in the table and %d missing, want all %d", err, gs.ops, gs.missing, decodeOps)
	}
	var sizes int64
	for _, op := range plan.Program(0, partition.Decode).Ops {
		_, _, size, _ := sim.OpKey(&op)
		sizes += size
	}
	want := 1e-3 - float64(sizes)*1e-9 - 2e-6
	if over := gs.over; len(over) != 2 || math.Abs(over[0]-want) > 1e-12 || math.Abs(over[1]-want) > 1e-12 || len(gs.saved) != 0 {
		t.Errorf("overheads %v, saved %v; want two of %g (decode sizes %d) and none saved", over, gs.saved, want, sizes)
	}
	// A table without attention lacks one op per layer: they are counted,
	// and count 0.
	var noAttn []configs.OpTime
	for _, e := range ts {
		if e.Kind != string(partition.Attention) {
			noAttn = append(noAttn, e)
		}
	}
	attn := 0
	for _, op := range plan.Program(0, partition.Decode).Ops {
		if op.Kind == partition.Attention {
			attn++
		}
	}
	if gs, err := measureGraphSteps(context.Background(), plan, sc, sim.NewOpTable(noAttn), 0, 1, nil, func() time.Duration { return 0 }); err != nil ||
		gs.missing != attn || attn == 0 || gs.ops != decodeOps-attn {
		t.Errorf("table without attention: %d ops missing and %d in the table, want the %d attention ops and the other %d (%v)", gs.missing, gs.ops, attn, decodeOps-attn, err)
	}
}

// execClock is the CPU backend on a clock that advances by per at every
// Exec: the host's time to queue an op.
type execClock struct {
	pexec.Compute
	per, now time.Duration
}

func (e *execClock) Exec(ctx context.Context, op *partition.Op, past int) error {
	e.now += e.per
	return e.Compute.Exec(ctx, op, past)
}

// The host's time to queue one op of the eager prefill: on a clock where
// each Exec takes 7 µs and nothing else takes time, the prefill's n
// compute ops queue in n × 7 µs, so each measured iteration gives 7 µs.
func TestHostOpTime(t *testing.T) {
	plan, err := partition.LoadPlan("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cpu.New(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ec := &execClock{Compute: c, per: 7 * time.Microsecond}
	gs, err := measureGraphSteps(context.Background(), plan, ec, sim.NewOpTable(nil), 0, 2, nil, func() time.Duration { return ec.now })
	if err != nil {
		t.Fatal(err)
	}
	if len(gs.hostOp) != 2 || math.Abs(gs.hostOp[0]-7e-6) > 1e-15 || math.Abs(gs.hostOp[1]-7e-6) > 1e-15 {
		t.Errorf("host time per op %v, want two of 7 µs", gs.hostOp)
	}
}
