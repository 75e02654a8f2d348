package cuda

import (
	"context"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
)

// StagedComms wraps host communicators (exec/localcomm, exec/tcpcomm) so
// they carry this backend's device buffers: each call copies a *Buffer to
// the host as float32 (waiting for the rank's queued work), runs the inner
// call on it, and copies received values back, rounded to the element
// type. exec.F32 buffers pass through untouched, so the CPU reference of a
// check can share the wrapper.
//
// Counts are the inner communicator's: float32 elements, 4 bytes each,
// which equal the Program's only for fp32 plans (the ones exec.Check
// makes). It is for checking numerics, not for measuring: a measured run
// on GPUs uses NCCL on the rank's stream.
func StagedComms(inner []pexec.Comm) []pexec.Comm {
	out := make([]pexec.Comm, len(inner))
	for i, c := range inner {
		out[i] = stagedComm{c}
	}
	return out
}

type stagedComm struct{ inner pexec.Comm }

var _ pexec.Comm = stagedComm{}

func (s stagedComm) Rank() int                         { return s.inner.Rank() }
func (s stagedComm) Size() int                         { return s.inner.Size() }
func (s stagedComm) Flush(ctx context.Context) error   { return s.inner.Flush(ctx) }
func (s stagedComm) Barrier(ctx context.Context) error { return s.inner.Barrier(ctx) }
func (s stagedComm) Counter() *commcount.Counter       { return s.inner.Counter() }
func (s stagedComm) Close() error                      { return s.inner.Close() }

func (s stagedComm) NewGroup(ctx context.Context, ranks []int) (pexec.Group, error) {
	g, err := s.inner.NewGroup(ctx, ranks)
	if err != nil {
		return nil, err
	}
	return stagedGroup{g}, nil
}

// host is buf's values on the host: the buffer itself for exec.F32, a copy
// for a device buffer.
func host(buf pexec.Buffer) (pexec.Buffer, error) {
	b, ok := buf.(*Buffer)
	if !ok {
		return buf, nil
	}
	v, err := b.ReadF32()
	if err != nil {
		return nil, err
	}
	return pexec.F32(v), nil
}

// back writes received host values into a device buffer.
func back(buf, h pexec.Buffer) error {
	b, ok := buf.(*Buffer)
	if !ok {
		return nil
	}
	return b.WriteF32(h.(pexec.F32))
}

// hostLike is a host buffer of buf's length to receive into.
func hostLike(buf pexec.Buffer) pexec.Buffer {
	if _, ok := buf.(*Buffer); ok {
		return make(pexec.F32, buf.Len())
	}
	return buf
}

func (s stagedComm) Send(ctx context.Context, buf pexec.Buffer, peer int) error {
	h, err := host(buf)
	if err != nil {
		return err
	}
	return s.inner.Send(ctx, h, peer)
}

func (s stagedComm) Recv(ctx context.Context, buf pexec.Buffer, peer int) error {
	h := hostLike(buf)
	if err := s.inner.Recv(ctx, h, peer); err != nil {
		return err
	}
	return back(buf, h)
}

type stagedGroup struct{ inner pexec.Group }

func (g stagedGroup) Ranks() []int { return g.inner.Ranks() }

func (g stagedGroup) AllReduce(ctx context.Context, buf pexec.Buffer) error {
	h, err := host(buf)
	if err != nil {
		return err
	}
	if err := g.inner.AllReduce(ctx, h); err != nil {
		return err
	}
	return back(buf, h)
}

func (g stagedGroup) AllGather(ctx context.Context, send, recv pexec.Buffer) error {
	hs, err := host(send)
	if err != nil {
		return err
	}
	hr := hostLike(recv)
	if err := g.inner.AllGather(ctx, hs, hr); err != nil {
		return err
	}
	return back(recv, hr)
}
