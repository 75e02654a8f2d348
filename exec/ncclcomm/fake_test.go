//go:build cgo

package ncclcomm

import (
	"context"
	"github.com/partbench/partbench/model"
	"sync"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/cgo/dl"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/ncclcomm/nccltest"
	"github.com/partbench/partbench/nccl"
	"github.com/partbench/partbench/partition"
)

// fakeLib builds the fake NCCL (nccltest) and binds it.
func fakeLib(t *testing.T, defines ...string) *nccl.Lib {
	t.Helper()
	lib, err := dl.Open(nccltest.Build(t, defines...), dl.Now|dl.Local)
	if err != nil {
		t.Fatal(err)
	}
	l, err := nccl.LoadFrom(lib)
	if err != nil {
		lib.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// hub is an in-process stand-in for the rendezvous session's Broadcast:
// member(r) is rank r's end; the k-th call of every member returns rank
// 0's k-th payload.
type hub struct {
	mu     sync.Mutex
	rounds []*round
}

type round struct {
	done    chan struct{}
	payload []byte
}

func (h *hub) round(k int) *round {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.rounds) <= k {
		h.rounds = append(h.rounds, &round{done: make(chan struct{})})
	}
	return h.rounds[k]
}

type member struct {
	h    *hub
	rank int
	k    int
}

func (m *member) Broadcast(ctx context.Context, payload []byte) ([]byte, error) {
	r := m.h.round(m.k)
	m.k++
	if m.rank == 0 {
		r.payload = append([]byte{}, payload...)
		close(r.done)
		return payload, nil
	}
	select {
	case <-r.done:
		return r.payload, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// world is every rank of a plan on the fakes: a Compute per rank (ranks
// alternate between the fake driver's two devices) and a Comm per rank,
// made concurrently as separate processes would.
type world struct {
	plan     *partition.Plan
	computes []*pcuda.Compute
	comms    []*Comm
}

func newWorld(t *testing.T, ctx context.Context, plan *partition.Plan, lib *nccl.Lib, opts Options) *world {
	t.Helper()
	cudatest.Build(t).Setenv(t)
	opts.Lib = lib
	w := &world{plan: plan, computes: make([]*pcuda.Compute, plan.Size()), comms: make([]*Comm, plan.Size())}
	for r := range w.computes {
		c, err := pcuda.New(plan, r, pcuda.Options{Device: r % 2, Graphs: true, GraphAfter: 1})
		if err != nil {
			t.Fatal(err)
		}
		w.computes[r] = c
		t.Cleanup(func() { c.Close() })
	}
	h := &hub{}
	errs := make([]error, plan.Size())
	var wg sync.WaitGroup
	for r := range w.comms {
		wg.Go(func() {
			w.comms[r], errs[r] = NewWith(ctx, &member{h: h, rank: r}, plan, r, w.computes[r], opts)
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		c := w.comms[r]
		t.Cleanup(func() { c.Close() }) // before the Compute's (cleanups run last first)
	}
	return w
}

// buffer is rank r's buffer name of micro-batch mb, elems long.
func (w *world) buffer(t *testing.T, r int, name string, mb, elems int) *pcuda.Buffer {
	t.Helper()
	var buf model.Buf
	if err := buf.UnmarshalText([]byte(name)); err != nil {
		t.Fatal(err)
	}
	b, err := w.computes[r].Buffer(buf, mb, elems)
	if err != nil {
		t.Fatal(err)
	}
	return b.(*pcuda.Buffer)
}
