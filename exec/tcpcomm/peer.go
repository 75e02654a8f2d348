package tcpcomm

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partbench/partbench/exec/shmcomm"
)

// peer is the connection to one other rank (or, with nc nil, this rank's
// own mailbox for self-sends).
type peer struct {
	c    *Comm
	rank int
	nc   net.Conn
	// seg and shm are the pair's shared segment and this side's link, for a
	// shared-memory pair (nil otherwise): messages travel through shm, the
	// connection carries only the goodbye and reports a lost peer.
	seg *shmcomm.Segment
	shm *shmcomm.Link
	// directSteps counts ring collective steps that sent to this peer
	// straight from the caller's elements (exchangeShm).
	directSteps atomic.Int64

	wmu      sync.Mutex
	queue    [][]byte
	queued   uint64
	written  uint64
	gone     bool          // the writer stopped; queued frames are dropped
	wake     chan struct{} // cap 1: the writer has work
	progress chan struct{} // closed and replaced after each write

	rmu        sync.Mutex
	boxes      map[uint64]*mailbox
	bye        chan struct{} // closed when the peer said goodbye
	byeOnce    sync.Once
	readerDone chan struct{}
}

type mailbox struct {
	msgs   [][]byte
	signal chan struct{} // cap 1: a message arrived
}

func newPeer(c *Comm, rank int, nc net.Conn) *peer {
	return &peer{
		c: c, rank: rank, nc: nc, wake: make(chan struct{}, 1), progress: make(chan struct{}),
		boxes: map[uint64]*mailbox{}, bye: make(chan struct{}), readerDone: make(chan struct{}),
	}
}

func (p *peer) start() {
	if p.nc == nil {
		close(p.readerDone)
		return
	}
	go p.writeLoop()
	go p.readLoop()
}

func (p *peer) saidBye() bool {
	select {
	case <-p.bye:
		return true
	default:
		return false
	}
}

func (p *peer) post(frame []byte) error {
	if p.nc == nil { // to self
		p.deliver(frame[:8], frame[hdrBytes:])
		return nil
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := p.sendable(); err != nil {
		return err
	}
	p.queue = append(p.queue, frame)
	p.queued++
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

func (p *peer) writeLoop() {
	defer func() {
		p.wmu.Lock()
		p.gone, p.queue = true, nil
		close(p.progress)
		p.wmu.Unlock()
	}()
	for {
		p.wmu.Lock()
		for len(p.queue) == 0 {
			p.wmu.Unlock()
			select { // after a failure too: Close's goodbye still goes out
			case <-p.wake:
			case <-p.c.stop:
				return
			}
			p.wmu.Lock()
		}
		f := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.wmu.Unlock()
		if err := p.write(f); err != nil {
			if !p.saidBye() && !p.c.isClosing() {
				p.c.fail(&PeerError{Rank: p.rank, Err: err})
			}
			return
		}
		p.wmu.Lock()
		p.written++
		close(p.progress)
		p.progress = make(chan struct{})
		p.wmu.Unlock()
	}
}

// drain waits, at most until deadline and whatever failed, until the writer
// has sent everything queued (Close's goodbye included) or stopped.
func (p *peer) drain(deadline time.Time) {
	if p.nc == nil {
		return
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		p.wmu.Lock()
		done, ch := p.written >= p.queued || p.gone, p.progress
		p.wmu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		}
	}
}

func (p *peer) flush(ctx context.Context) error {
	if p.nc == nil {
		return nil
	}
	p.wmu.Lock()
	target := p.queued
	p.wmu.Unlock()
	for {
		p.wmu.Lock()
		done, gone, ch := p.written >= target, p.gone, p.progress
		p.wmu.Unlock()
		if done {
			return nil
		}
		if gone {
			if p.saidBye() {
				return fmt.Errorf("tcpcomm: rank %d closed its communicator with messages still queued for it", p.rank)
			}
			if err := p.c.failure(); err != nil {
				return err
			}
			return ErrClosed
		}
		select {
		case <-ch:
		case <-p.c.failed:
			return p.c.failure()
		case <-ctx.Done():
			return fmt.Errorf("tcpcomm: flush to rank %d: %w", p.rank, ctx.Err())
		}
	}
}

func (p *peer) readLoop() {
	defer close(p.readerDone)
	br := bufio.NewReaderSize(p.nc, 256<<10)
	for {
		ch, msg, err := readMessage(br)
		var bad *badHeaderError
		switch {
		case errors.As(err, &bad):
			p.c.fail(&PeerError{Rank: p.rank, Err: err})
			return
		case err != nil:
			p.readFailed(err)
			return
		case ch == chBye:
			p.byeOnce.Do(func() { close(p.bye) })
			continue
		}
		var chBytes [8]byte
		binary.LittleEndian.PutUint64(chBytes[:], ch)
		p.deliver(chBytes[:], msg)
	}
}

// readFailed handles the end of a connection: after a goodbye it is the
// peer's clean close (close our side too, so its Close returns); during our
// own Close it is expected; otherwise the peer is lost.
func (p *peer) readFailed(err error) {
	switch {
	case p.saidBye():
		_ = p.nc.Close()
	case p.c.isClosing():
	default:
		p.c.fail(&PeerError{Rank: p.rank, Err: err})
	}
}

func (p *peer) deliver(chBytes []byte, msg []byte) {
	ch := binary.LittleEndian.Uint64(chBytes)
	p.rmu.Lock()
	box := p.boxLocked(ch)
	box.msgs = append(box.msgs, msg)
	p.rmu.Unlock()
	select {
	case box.signal <- struct{}{}:
	default:
	}
}

func (p *peer) boxLocked(ch uint64) *mailbox {
	b := p.boxes[ch]
	if b == nil {
		b = &mailbox{signal: make(chan struct{}, 1)}
		p.boxes[ch] = b
	}
	return b
}

func (p *peer) take(ctx context.Context, ch uint64) ([]byte, error) {
	if p.shm != nil {
		return p.takeShm(ctx, ch)
	}
	p.rmu.Lock()
	box := p.boxLocked(ch)
	p.rmu.Unlock()
	for {
		p.rmu.Lock()
		if len(box.msgs) > 0 {
			m := box.msgs[0]
			box.msgs[0] = nil
			box.msgs = box.msgs[1:]
			p.rmu.Unlock()
			return m, nil
		}
		p.rmu.Unlock()
		select {
		case <-box.signal:
		case <-p.bye:
			p.rmu.Lock()
			empty := len(box.msgs) == 0
			p.rmu.Unlock()
			if empty {
				return nil, fmt.Errorf("tcpcomm: rank %d closed its communicator", p.rank)
			}
		case <-p.c.failed:
			return nil, p.c.failure()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// shutdown closes the connection after our goodbye: FIN, wait (at most
// linger) for the peer's side to end, close.
func (p *peer) shutdown(linger time.Duration) {
	if tc, ok := p.nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	select {
	case <-p.readerDone:
	case <-time.After(linger):
	}
	_ = p.nc.Close()
}

// sendable says why a message cannot go to p now: it said goodbye, or the
// connection is gone (the communicator's failure where there is one).
// Called with wmu held.
func (p *peer) sendable() error {
	if p.saidBye() {
		return fmt.Errorf("tcpcomm: rank %d closed its communicator", p.rank)
	}
	if p.gone {
		if err := p.c.failure(); err != nil {
			return err
		}
		return ErrClosed
	}
	return nil
}
