package ncclcomm

import (
	"context"
	"fmt"

	pexec "github.com/partbench/partbench/exec"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Point-to-point messages are ncclSend and ncclRecv on the world
// communicator, on the rank's stream. NCCL's send completes only with its
// receive, and a stream runs one call at a time, so a Program that relies
// on a send returning at once (exec/tcpcomm buffers it) could wait on
// itself: in a pipeline whose last stage returns tokens, stage 1 sends
// micro-batch 0's tokens to stage 0 and then receives micro-batch 1's
// activations, while stage 0 sends those activations before it receives
// the tokens. Each waits for the other.
//
// So a Send that the rank's Program follows at once with a Recv (no op in
// between, Program order, the decode Program repeating after itself and
// after prefill) is made inside an NCCL group that the Recv closes: NCCL
// progresses the two together, as a pipeline's send-forward-receive-
// forward does. Nothing is queued between them, so the stream order and
// the sent data are the same; the send is counted when Send is called. Any
// other call closes the group first. A Send the Program follows with
// anything else is made at once.

// sendKey identifies a Send op of a Program by the buffer it sends.
type sendKey struct {
	buf   model.Buf
	mb    int
	peer  int
	elems int
}

// fusedSends is the set of rank's Send ops that its Programs follow at
// once with a Recv. A key that is also a Send followed by something else
// (the same buffer sent from two places) is left out.
func fusedSends(plan *partition.Plan, rank int) map[sendKey]bool {
	pre := plan.Program(rank, partition.Prefill).Ops
	dec := plan.Program(rank, partition.Decode).Ops
	verdict := map[sendKey]bool{}
	note := func(op *partition.Op, next *partition.Op) {
		k := sendKey{op.In, op.Microbatch, op.Peer, op.Elems}
		f := next != nil && next.Kind == partition.Recv
		if v, seen := verdict[k]; seen {
			f = f && v
		}
		verdict[k] = f
	}
	after := func(ops []partition.Op, i int, then []partition.Op) *partition.Op {
		if i+1 < len(ops) {
			return &ops[i+1]
		}
		if len(then) > 0 {
			return &then[0]
		}
		return nil
	}
	for i := range pre {
		if pre[i].Kind == partition.Send {
			note(&pre[i], after(pre, i, dec))
		}
	}
	for i := range dec {
		if dec[i].Kind == partition.Send {
			note(&dec[i], after(dec, i, dec))
		}
	}
	out := map[sendKey]bool{}
	for k, f := range verdict {
		if f {
			out[k] = true
		}
	}
	return out
}

func (c *Comm) checkPeer(what string, peer int) error {
	if peer < 0 || peer >= c.size {
		return fmt.Errorf("ncclcomm: rank %d: %s: rank %d is outside a world of %d", c.rank, what, peer, c.size)
	}
	if peer == c.rank {
		return fmt.Errorf("ncclcomm: rank %d: %s: a rank does not send to itself here (NCCL pairs a self-send with its receive in one group)", c.rank, what)
	}
	return nil
}

// Send queues buf to peer on the rank's stream: a kernel queued after it
// may overwrite buf, and the send completes when peer has received it.
// Counted as one send call and one message to peer.
func (c *Comm) Send(ctx context.Context, buf pexec.Buffer, peer int) error {
	what := fmt.Sprintf("send to rank %d", peer)
	b, dt, err := c.device(buf, what)
	if err != nil {
		return err
	}
	if err := c.checkPeer(what, peer); err != nil {
		return err
	}
	fuse := c.fused[keyOf(b, peer)]
	c.clean = false
	return c.call(ctx, what, func() error {
		if err := c.endGroup(ctx); err != nil {
			return err
		}
		if !fuse {
			if err := c.world.Send(uintptr(b.Ptr()), b.Len(), dt, peer, c.stream()); err != nil {
				return err
			}
			return c.settle(ctx, c.world)
		}
		return c.openGroup(func() error {
			return c.world.Send(uintptr(b.Ptr()), b.Len(), dt, peer, c.stream())
		})
	})
}

// Recv queues the receipt of peer's next message into buf on the rank's
// stream (kernels queued after it see the data), in one NCCL group with
// the Send before it if that one was left open. Counted as one recv call.
func (c *Comm) Recv(ctx context.Context, buf pexec.Buffer, peer int) error {
	what := fmt.Sprintf("recv from rank %d", peer)
	b, dt, err := c.device(buf, what)
	if err != nil {
		return err
	}
	if err := c.checkPeer(what, peer); err != nil {
		return err
	}
	c.clean = false
	return c.call(ctx, what, func() error {
		err := c.world.Recv(uintptr(b.Ptr()), b.Len(), dt, peer, c.stream())
		if c.inGroup {
			if gerr := c.endGroup(ctx); err == nil {
				err = gerr
			}
			return err
		}
		if err != nil {
			return err
		}
		return c.settle(ctx, c.world)
	})
}

func keyOf(b *pcuda.Buffer, peer int) sendKey {
	return sendKey{b.Name(), b.Microbatch(), peer, b.Len()}
}

// openGroup starts an NCCL group, makes fn's call in it and leaves it
// open. The goroutine stays pinned to its thread (NCCL keeps a group per
// thread) until endGroup; no abort runs meanwhile.
func (c *Comm) openGroup(fn func() error) error {
	c.gmu.Lock()
	defer c.gmu.Unlock()
	if err := c.failure(); err != nil {
		return err
	}
	if err := c.lib.GroupStart(); err != nil {
		return err
	}
	c.inGroup = true
	if err := fn(); err != nil {
		c.inGroup = false
		if gerr := c.lib.GroupEnd(); gerr != nil {
			return fmt.Errorf("%w; then %w", err, gerr)
		}
		return err
	}
	return nil
}

// endGroup closes the group openGroup left open, if any, which queues its
// calls, and runs an abort that came meanwhile.
func (c *Comm) endGroup(ctx context.Context) error {
	if !c.inGroup {
		return nil
	}
	err := c.lib.GroupEnd()
	c.gmu.Lock()
	c.inGroup = false
	due := c.abortDue
	c.abortDue = false
	c.gmu.Unlock()
	if due {
		c.abortAll()
	}
	if err != nil {
		return err
	}
	return c.settle(ctx, c.world)
}
