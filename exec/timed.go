package exec

import (
	"context"
	"sync"
	"time"

	"github.com/partbench/partbench/partition"
)

// busy accumulates the time spent in each kind of op. Compute and
// communication calls on the CPU backend return when their work is done, so
// wall time around a call is its time.
type busy struct {
	mu sync.Mutex
	on bool
	s  map[string]float64
}

func (b *busy) add(kind partition.Kind, start time.Time) {
	d := time.Since(start).Seconds()
	b.mu.Lock()
	if b.on {
		b.s[string(kind)] += d
	}
	b.mu.Unlock()
}

type timedCompute struct {
	Compute
	b *busy
}

func (t timedCompute) Exec(ctx context.Context, op *partition.Op, past int) error {
	start := time.Now()
	err := t.Compute.Exec(ctx, op, past)
	t.b.add(op.Kind, start)
	return err
}

type timedComm struct {
	Comm
	b *busy
}

func (t timedComm) Send(ctx context.Context, buf Buffer, peer int) error {
	start := time.Now()
	err := t.Comm.Send(ctx, buf, peer)
	t.b.add(partition.Send, start)
	return err
}

func (t timedComm) Recv(ctx context.Context, buf Buffer, peer int) error {
	start := time.Now()
	err := t.Comm.Recv(ctx, buf, peer)
	t.b.add(partition.Recv, start)
	return err
}

type timedGroup struct {
	Group
	b *busy
}

func (t timedGroup) AllReduce(ctx context.Context, buf Buffer) error {
	start := time.Now()
	err := t.Group.AllReduce(ctx, buf)
	t.b.add(partition.AllReduce, start)
	return err
}

func (t timedGroup) AllGather(ctx context.Context, send, recv Buffer) error {
	start := time.Now()
	err := t.Group.AllGather(ctx, send, recv)
	t.b.add(partition.AllGather, start)
	return err
}
