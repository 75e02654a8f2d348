package exec

import (
	"context"
	"testing"

	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// queuedCompute is a device-like Compute (a DeviceClock) that counts its
// syncs; countGroup counts the collective calls made on it.
type queuedCompute struct{ syncs int }

func (q *queuedCompute) Exec(context.Context, *partition.Op, int) error { return nil }
func (q *queuedCompute) Buffer(_ model.Buf, _, elems int) (Buffer, error) {
	return F32(make([]float32, elems)), nil
}
func (q *queuedCompute) Sync(context.Context) error { q.syncs++; return nil }
func (q *queuedCompute) AllocatedBytes() int64      { return 0 }
func (q *queuedCompute) Close() error               { return nil }
func (q *queuedCompute) Mark() error                { return nil }
func (q *queuedCompute) Marks() ([]float64, error)  { return nil, nil }

type countGroup struct{ calls int }

func (g *countGroup) Ranks() []int                                    { return []int{0, 1} }
func (g *countGroup) AllReduce(context.Context, Buffer) error         { g.calls++; return nil }
func (g *countGroup) AllGather(context.Context, Buffer, Buffer) error { g.calls++; return nil }

// On a device the probe queues its calls back to back and syncs once after
// them (and once after the untimed first): a sync after each would time
// the host's round trip to the device, which a run's queued collectives do
// not pay. The probe says it was batched, its median and least the mean.
func TestProbeQueuedDevice(t *testing.T) {
	c, g := &queuedCompute{}, &countGroup{}
	op := &partition.Op{Kind: partition.AllReduce, Group: []int{0, 1}, Elems: 256, Bytes: 1024, In: model.X}
	p, err := probeOne(context.Background(), op, c, nil, map[string]Group{GroupKey(op.Group): g}, 16)
	if err != nil {
		t.Fatal(err)
	}
	if g.calls != 17 || c.syncs != 2 || !p.Batched || p.Calls != 16 || p.MedianS != p.MinS || !(p.MedianS > 0) || p.Bytes != 1024 {
		t.Errorf("probe %+v after %d calls and %d syncs; want 17 calls, 2 syncs, batched, median = least > 0", p, g.calls, c.syncs)
	}
}
