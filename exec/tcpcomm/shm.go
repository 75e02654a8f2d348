package tcpcomm

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/partbench/partbench/exec/shmcomm"
)

// Shared-memory pairs: a message goes straight onto the pair's ring from the
// caller's goroutine when nothing is queued before it and it fits; otherwise
// its frame joins the peer's queue and the writer goroutine streams it
// through the ring as the peer reads (so a Send never waits, as over TCP).
// The receiver reads the ring from its own goroutine and files each message
// under its channel, as the TCP reader does. A ring collective's step is
// sent and received by one goroutine at once (exchangeShm): its chunk goes
// from the caller's elements onto the ring and the peer's chunk is summed
// or copied straight out of the ring as it arrives, so chunks larger than
// the ring pipeline through it.

// withMap runs f while the segments are mapped; false if Close unmapped them.
func (c *Comm) withMap(f func()) bool {
	c.mapMu.RLock()
	defer c.mapMu.RUnlock()
	if c.unmapped {
		return false
	}
	f()
	return true
}

// unmap releases every shared segment once no ring is in use.
func (c *Comm) unmap() {
	c.mapMu.Lock()
	defer c.mapMu.Unlock()
	c.unmapped = true
	for _, p := range c.peers {
		if p.seg != nil {
			p.seg.Close()
		}
	}
}

// postShm sends one message to a shared-memory peer.
func (p *peer) postShm(ch uint64, data []float32) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := p.sendable(); err != nil {
		return err
	}
	if p.queued == p.written { // the writer is idle: the ring is ours
		sent := false
		if !p.c.withMap(func() { sent = p.shm.TrySend(ch, data) }) {
			return ErrClosed
		}
		if sent {
			return nil
		}
	}
	p.queue = append(p.queue, frameOf(ch, data))
	p.queued++
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// write sends one queued frame: the goodbye over the connection (after
// every frame queued before it went through the ring), data through the
// ring of a shared-memory pair, else over the connection.
func (p *peer) write(f []byte) error {
	if p.shm == nil || binary.LittleEndian.Uint64(f) == chBye {
		_, err := p.nc.Write(f)
		return err
	}
	abort := func() error {
		select {
		case <-p.c.stop:
			return ErrClosed
		case <-p.c.failed:
			return p.c.failure()
		case <-p.bye:
			return fmt.Errorf("tcpcomm: rank %d closed its communicator", p.rank)
		default:
			return nil
		}
	}
	var err error
	if !p.c.withMap(func() { err = p.shm.SendFrame(f, abort) }) {
		return ErrClosed
	}
	return err
}

// pollShm files what has arrived from a shared-memory peer (landing the
// message in's caller waits for straight in its elements, if in is not
// nil); a frame no partbench rank sends fails the communicator.
func (p *peer) pollShm(in *shmcomm.In) (progress bool, err error) {
	deliver := func(ch uint64, msg []byte) {
		var chBytes [8]byte
		binary.LittleEndian.PutUint64(chBytes[:], ch)
		p.deliver(chBytes[:], msg)
	}
	ok := p.c.withMap(func() {
		if in != nil {
			progress, err = p.shm.PollInto(MaxMessageBytes, in, deliver)
		} else {
			progress, err = p.shm.Poll(MaxMessageBytes, deliver)
		}
	})
	if !ok {
		return false, ErrClosed
	}
	if err != nil {
		p.c.fail(&PeerError{Rank: p.rank, Err: err})
		return false, p.c.failure()
	}
	return progress, nil
}

// pop takes the oldest message of box, if any.
func (p *peer) pop(box *mailbox) ([]byte, bool) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	if len(box.msgs) == 0 {
		return nil, false
	}
	m := box.msgs[0]
	box.msgs[0] = nil
	box.msgs = box.msgs[1:]
	return m, true
}

// takeShm waits for the next message on channel ch from a shared-memory
// peer, reading the ring itself; it ends as a TCP take does when the peer
// says goodbye, the communicator fails (the connection to a peer dropped)
// or ctx is done, checked at least every shmcomm.SleepMax.
func (p *peer) takeShm(ctx context.Context, ch uint64) ([]byte, error) {
	p.rmu.Lock()
	box := p.boxLocked(ch)
	p.rmu.Unlock()
	w := shmcomm.Waiter{Spin: &p.shm.Spin}
	for {
		if m, ok := p.pop(box); ok {
			return m, nil
		}
		progress, err := p.pollShm(nil)
		if err != nil {
			return nil, err
		}
		if progress {
			w.Reset()
			continue
		}
		select {
		case <-p.bye:
			// what the peer sent before its goodbye is in the ring already
			for {
				pending := 0
				if !p.c.withMap(func() { pending = p.shm.Pending() }) {
					return nil, ErrClosed
				}
				if pending == 0 {
					break
				}
				if _, err := p.pollShm(nil); err != nil {
					return nil, err
				}
			}
			if m, ok := p.pop(box); ok {
				return m, nil
			}
			return nil, fmt.Errorf("tcpcomm: rank %d closed its communicator", p.rank)
		case <-p.c.failed:
			return nil, p.c.failure()
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		if !p.c.withMap(func() { p.shm.WaitData(&w) }) {
			return nil, ErrClosed
		}
	}
}

// directTo says whether a ring collective's step may send to p straight
// from the caller's elements: p is a shared-memory peer and nothing queued
// for it is still going through its ring (only the caller's goroutine
// posts, so none can join the queue during the step).
func (p *peer) directTo() bool {
	if p.shm == nil {
		return false
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.queued == p.written && p.sendable() == nil
}

// exchangeShm is one step of a ring collective over shared memory: out goes
// to next on channel ch straight from the caller's elements while the next
// message on ch from prev lands in in (added element by element if add,
// else copied), both pipelined through the rings from this goroutine, so a
// chunk larger than a ring needs neither a copy of its own nor the writer
// goroutine, and a received chunk is summed as it arrives. It returns when
// out is on next's ring and in has landed (what names the step in errors).
// A step abandoned half-way (ctx done, a lost peer) leaves a ring
// mid-message, so it fails the communicator.
func (c *Comm) exchangeShm(ctx context.Context, next, prev *peer, ch uint64, out, in []float32, add bool, what func() string) (err error) {
	next.directSteps.Add(1)
	o := shmcomm.Out{Ch: ch, Data: out}
	land := shmcomm.In{Ch: ch, Dst: in, Add: add}
	received := false
	prev.rmu.Lock()
	box := prev.boxLocked(ch)
	prev.rmu.Unlock()
	if msg, ok := prev.pop(box); ok { // it came while an earlier call read the ring
		if err := receivedMsg(what(), prev.rank, msg, in, add); err != nil {
			return err
		}
		received = true
	}
	defer func() {
		if err == nil {
			return
		}
		cut := false
		c.withMap(func() { cut = prev.shm.Abandon() })
		if cut || (o.Started() && !o.Done()) {
			c.fail(fmt.Errorf("tcpcomm: %s: %w (a message to rank %d or from rank %d was left half-way through shared memory)", what(), err, next.rank, prev.rank))
		}
	}()
	w := shmcomm.Waiter{Spin: &prev.shm.Spin}
	for {
		progress := false
		if !o.Done() {
			if !c.withMap(func() { progress = next.shm.PushOut(&o) }) {
				return ErrClosed
			}
		}
		if !received {
			got, done, err := c.receiveStep(prev, &land, box, what, in, add)
			if err != nil {
				return err
			}
			progress, received = progress || got, done
		}
		if o.Done() && received {
			w.Reset() // records whether a spin was met, for the next waits
			return nil
		}
		if progress {
			w.Reset()
			continue
		}
		select {
		case <-prev.bye:
			if !received {
				return c.afterBye(prev, &land, box, what, in, add)
			}
		case <-next.bye:
			if !o.Done() {
				return fmt.Errorf("tcpcomm: rank %d closed its communicator", next.rank)
			}
		case <-c.failed:
			return c.failure()
		case <-ctx.Done():
			return fmt.Errorf("tcpcomm: %s from rank %d: %w", what(), prev.rank, ctx.Err())
		default:
		}
		recvLink, sendLink := prev.shm, next.shm
		need, sending := o.Need(), !o.Done()
		var waited bool
		switch {
		case received: // only room on next's ring: its bell rings for that
			w.Spin = &sendLink.Spin
			waited = c.withMap(func() { sendLink.WaitFor(&w, false, need, nil) })
		case !sending: // only data from prev
			waited = c.withMap(func() { recvLink.WaitFor(&w, true, 0, nil) })
		case next == prev: // both, and one bell rings for both
			waited = c.withMap(func() { recvLink.WaitFor(&w, true, need, nil) })
		default: // data from prev and room at next: two bells, sleep briefly on prev's
			w.Sleep = shmcomm.SleepBoth
			waited = c.withMap(func() { recvLink.WaitFor(&w, true, 0, func() bool { return sendLink.Room() >= need }) })
			w.Sleep = 0
		}
		if !waited {
			return ErrClosed
		}
	}
}

// receiveStep is one non-waiting step of exchangeShm's receive: poll prev,
// landing the message in its In or, where it goes to the mailbox instead,
// taking it from there once complete. done says the message is in in.
func (c *Comm) receiveStep(prev *peer, land *shmcomm.In, box *mailbox, what func() string, in []float32, add bool) (progress, done bool, err error) {
	if !land.Delivered() {
		if progress, err = prev.pollShm(land); err != nil || land.Landed() {
			return progress, err == nil, err
		}
	}
	if !land.Delivered() {
		return progress, false, nil
	}
	msg, ok := prev.pop(box)
	if !ok {
		got, err := prev.pollShm(nil)
		if err != nil {
			return false, false, err
		}
		progress = progress || got
		if msg, ok = prev.pop(box); !ok {
			return progress, false, nil
		}
	}
	return true, true, receivedMsg(what(), prev.rank, msg, in, add)
}

// afterBye ends a step whose sender said goodbye: what it sent before is in
// the ring already, so read it all, then the message is there or never
// comes.
func (c *Comm) afterBye(prev *peer, land *shmcomm.In, box *mailbox, what func() string, in []float32, add bool) error {
	for {
		_, done, err := c.receiveStep(prev, land, box, what, in, add)
		if err != nil || done {
			return err
		}
		pending := 0
		if !c.withMap(func() { pending = prev.shm.Pending() }) {
			return ErrClosed
		}
		if pending == 0 {
			return fmt.Errorf("tcpcomm: rank %d closed its communicator", prev.rank)
		}
	}
}

// receivedMsg puts a received message into in: added or copied, after its
// length is checked.
func receivedMsg(what string, from int, msg []byte, in []float32, add bool) error {
	if err := checkLen(what, from, msg, len(in)); err != nil {
		return err
	}
	if add {
		addInto(in, msg)
	} else {
		decodeInto(in, msg)
	}
	return nil
}
