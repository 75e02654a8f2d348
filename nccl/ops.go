package nccl

import "fmt"

// The collectives and point-to-point calls. Buffers and the stream are
// device addresses (CUdeviceptr, CUstream) passed through untouched; counts
// are in elements. On a non-blocking communicator ncclInProgress counts as
// accepted: the call is counted and (*Comm).Wait reports how it ended.

// AllReduce reduces count elements of send over all ranks into recv
// (in place when send == recv).
func (c *Comm) AllReduce(send, recv uintptr, count int, dt DataType, op RedOp, stream uintptr) error {
	if err := c.check("ncclAllReduce", count, dt); err != nil {
		return err
	}
	if err := c.result("ncclAllReduce", c.lib.c.allReduce(send, recv, count, dt, op, c.h, stream)); err != nil {
		return err
	}
	c.allReduce(count, dt.Size())
	return nil
}

// AllGather gathers sendcount elements from every rank into recv
// (nranks × sendcount elements, in position order).
func (c *Comm) AllGather(send, recv uintptr, sendcount int, dt DataType, stream uintptr) error {
	if err := c.check("ncclAllGather", sendcount, dt); err != nil {
		return err
	}
	if err := c.result("ncclAllGather", c.lib.c.allGather(send, recv, sendcount, dt, c.h, stream)); err != nil {
		return err
	}
	c.allGather(sendcount, dt.Size())
	return nil
}

// ReduceScatter reduces nranks × recvcount elements of send over all ranks
// and leaves block p of the result in recv on position p.
func (c *Comm) ReduceScatter(send, recv uintptr, recvcount int, dt DataType, op RedOp, stream uintptr) error {
	if err := c.check("ncclReduceScatter", recvcount, dt); err != nil {
		return err
	}
	if err := c.result("ncclReduceScatter", c.lib.c.reduceScatter(send, recv, recvcount, dt, op, c.h, stream)); err != nil {
		return err
	}
	c.reduceScatter(recvcount, dt.Size())
	return nil
}

// Broadcast copies count elements of send on position root into recv on
// every rank.
func (c *Comm) Broadcast(send, recv uintptr, count int, dt DataType, root int, stream uintptr) error {
	if err := c.check("ncclBroadcast", count, dt); err != nil {
		return err
	}
	if root < 0 || root >= len(c.ranks) {
		return fmt.Errorf("nccl: ncclBroadcast: root %d is not a position of a %d-rank communicator", root, len(c.ranks))
	}
	if err := c.result("ncclBroadcast", c.lib.c.broadcast(send, recv, count, dt, root, c.h, stream)); err != nil {
		return err
	}
	c.broadcast(count, dt.Size(), root)
	return nil
}

// Send sends count elements of buf to position peer, which calls Recv.
func (c *Comm) Send(buf uintptr, count int, dt DataType, peer int, stream uintptr) error {
	if err := c.checkPeer("ncclSend", count, dt, peer); err != nil {
		return err
	}
	if err := c.result("ncclSend", c.lib.c.send(buf, count, dt, peer, c.h, stream)); err != nil {
		return err
	}
	c.send(count, dt.Size(), peer)
	return nil
}

// Recv receives count elements from position peer into buf.
func (c *Comm) Recv(buf uintptr, count int, dt DataType, peer int, stream uintptr) error {
	if err := c.checkPeer("ncclRecv", count, dt, peer); err != nil {
		return err
	}
	if err := c.result("ncclRecv", c.lib.c.recv(buf, count, dt, peer, c.h, stream)); err != nil {
		return err
	}
	c.recv(count, dt.Size())
	return nil
}

func (c *Comm) check(call string, count int, dt DataType) error {
	if err := c.usable(call); err != nil {
		return err
	}
	if count < 0 {
		return fmt.Errorf("nccl: %s: negative count %d", call, count)
	}
	if !dt.known() {
		return fmt.Errorf("nccl: %s: unknown data type %d", call, int32(dt))
	}
	return nil
}

func (c *Comm) checkPeer(call string, count int, dt DataType, peer int) error {
	if err := c.check(call, count, dt); err != nil {
		return err
	}
	if peer < 0 || peer >= len(c.ranks) {
		return fmt.Errorf("nccl: %s: peer %d is not a position of a %d-rank communicator", call, peer, len(c.ranks))
	}
	return nil
}

func (c *Comm) result(call string, r Result) error {
	if r == Success || (r == InProgress && c.nonBlocking) {
		return nil
	}
	return c.fail(call, r)
}
