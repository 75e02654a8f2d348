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
// under its channel, as the TCP reader does.

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

// pollShm files what has arrived from a shared-memory peer; a frame no
// partbench rank sends fails the communicator.
func (p *peer) pollShm() (progress bool, err error) {
	ok := p.c.withMap(func() {
		progress, err = p.shm.Poll(MaxMessageBytes, func(ch uint64, msg []byte) {
			var chBytes [8]byte
			binary.LittleEndian.PutUint64(chBytes[:], ch)
			p.deliver(chBytes[:], msg)
		})
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
		progress, err := p.pollShm()
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
				if _, err := p.pollShm(); err != nil {
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
