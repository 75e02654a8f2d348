package tcpcomm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
)

// DefaultConnectTimeout bounds New's connection set-up, whatever ctx says.
const DefaultConnectTimeout = 30 * time.Second

// ErrClosed is returned by calls on a closed Comm.
var ErrClosed = errors.New("tcpcomm: communicator closed")

// Exchanger publishes each rank's listen address to every other: the
// rendezvous session's AllGather.
type Exchanger interface {
	AllGather(ctx context.Context, payload []byte) ([][]byte, error)
}

// PeerError reports a connection to a peer that dropped without a goodbye
// (the peer's process died, or the network failed).
type PeerError struct {
	Rank int
	Err  error
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("tcpcomm: lost connection to rank %d: %v", e.Rank, e.Err)
}

func (e *PeerError) Unwrap() error { return e.Err }

// Comm is an exec.Comm over TCP: one connection per pair of ranks (the
// higher rank dials the lower), a writer goroutine and a queue per peer (so
// Send returns at once and messages to a peer stay in order), and a reader
// goroutine per peer that files each message under its channel.
//
// A connection that drops without a goodbye fails every pending and later
// call with a *PeerError naming the rank. Every call returns when its ctx is
// done. Calls are made from one goroutine, as exec.Comm says.
type Comm struct {
	rank, size int
	counter    *commcount.Counter
	peers      []*peer // by rank; peers[rank] is this rank (self-sends)

	groupMu   sync.Mutex
	groupSeen map[string]int    // group key → instances created
	groupIDs  map[uint64]string // channel → group key

	failMu  sync.Mutex
	failErr error
	failed  chan struct{} // closed on the first failure (or Close)
	closing chan struct{} // closed when Close starts
	stop    chan struct{} // closed when Close ends: writers exit

	closeOnce sync.Once

	transport Transport // as resolved by NewWith
	fallbacks []string  // same-host pairs left on TCP under TransportAuto, and why
	// mapMu guards the shared segments' mappings: every use of a ring holds
	// it for reading; Close unmaps them holding it for writing.
	mapMu    sync.RWMutex
	unmapped bool
	spin     string // the shared-memory waits' spin policy and why (SpinPolicy)
	waitLog  string // WaitLogEnv's folder, "" for none
}

// SpinPolicy says how this rank's shared-memory waits spin before they
// sleep, and why (SpinEnv).
func (c *Comm) SpinPolicy() string { return c.spin }

var _ pexec.Comm = (*Comm)(nil)

// Rank is this rank's global rank.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.size }

// Counter is where every call is counted.
func (c *Comm) Counter() *commcount.Counter { return c.counter }

// fail records the first failure; every pending and later call returns it.
func (c *Comm) fail(err error) {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	if c.failErr == nil {
		c.failErr = err
		close(c.failed)
	}
}

func (c *Comm) failure() error {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	return c.failErr
}

func (c *Comm) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// usable is the error a call must return before it starts, if any.
func (c *Comm) usable(ctx context.Context) error {
	if err := c.failure(); err != nil {
		return err
	}
	return ctx.Err()
}

func asF32(buf pexec.Buffer, op string) (pexec.F32, error) {
	b, ok := buf.(pexec.F32)
	if !ok {
		return nil, fmt.Errorf("tcpcomm: %s: unsupported buffer type %T (want exec.F32)", op, buf)
	}
	return b, nil
}

func (c *Comm) checkPeer(op string, peer int) error {
	if peer < 0 || peer >= c.size {
		return fmt.Errorf("tcpcomm: %s: rank %d is outside a world of %d", op, peer, c.size)
	}
	return nil
}

// Send posts buf to peer and returns: the elements are copied, so buf may
// be reused at once. Counted as one send call and one message to peer.
func (c *Comm) Send(ctx context.Context, buf pexec.Buffer, peer int) error {
	b, err := asF32(buf, "send")
	if err != nil {
		return err
	}
	if err := c.checkPeer("send", peer); err != nil {
		return err
	}
	if err := c.usable(ctx); err != nil {
		return err
	}
	c.counter.Call(commcount.Send, b.Bytes())
	if err := c.post(peer, chP2P, b); err != nil {
		return err
	}
	c.counter.Message(peer, b.Bytes())
	return nil
}

// Recv fills buf with the next message from peer; the sizes must match.
// Counted as one recv call (messages are counted by their sender).
func (c *Comm) Recv(ctx context.Context, buf pexec.Buffer, peer int) error {
	b, err := asF32(buf, "recv")
	if err != nil {
		return err
	}
	if err := c.checkPeer("recv", peer); err != nil {
		return err
	}
	if err := c.usable(ctx); err != nil {
		return err
	}
	c.counter.Call(commcount.Recv, b.Bytes())
	msg, err := c.take(ctx, peer, chP2P, "recv")
	if err != nil {
		return err
	}
	if err := checkLen("recv", peer, msg, len(b)); err != nil {
		return err
	}
	decodeInto(b, msg)
	return nil
}

// Flush waits until every posted message has been handed to the kernel.
func (c *Comm) Flush(ctx context.Context) error {
	for _, p := range c.peers {
		if err := p.flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Barrier returns when every rank has entered it (a dissemination barrier:
// ⌈log2 n⌉ rounds of empty messages). It is not counted: it is no
// communication op of a Program.
func (c *Comm) Barrier(ctx context.Context) error {
	if err := c.usable(ctx); err != nil {
		return err
	}
	for k := 1; k < c.size; k <<= 1 {
		to, from := (c.rank+k)%c.size, (c.rank-k+c.size)%c.size
		if err := c.post(to, chBarrier, nil); err != nil {
			return err
		}
		if _, err := c.take(ctx, from, chBarrier, "barrier"); err != nil {
			return err
		}
	}
	return nil
}

// post queues data for peer on channel ch.
func (c *Comm) post(peer int, ch uint64, data []float32) error {
	if 4*len(data) > MaxMessageBytes {
		return fmt.Errorf("tcpcomm: a message of %d B to rank %d exceeds the %d B cap", 4*len(data), peer, MaxMessageBytes)
	}
	if p := c.peers[peer]; p.shm != nil {
		return p.postShm(ch, data)
	}
	return c.peers[peer].post(frameOf(ch, data))
}

// take waits for the next message from peer on channel ch.
func (c *Comm) take(ctx context.Context, peer int, ch uint64, what string) ([]byte, error) {
	msg, err := c.peers[peer].take(ctx, ch)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, fmt.Errorf("tcpcomm: %s from rank %d: %w", what, peer, err)
	}
	return msg, err
}

// Close sends what is queued (for up to 2 s), says goodbye to every peer so
// its end is not mistaken for a failure, and releases the connections.
// Pending calls fail with ErrClosed.
func (c *Comm) Close() error {
	var logErr error
	c.closeOnce.Do(func() {
		close(c.closing)
		for _, p := range c.peers {
			if p.nc != nil {
				_ = p.post(frameOf(chBye, nil)) // after everything already queued
			}
		}
		deadline := time.Now().Add(2 * time.Second)
		for _, p := range c.peers {
			p.drain(deadline)
		}
		var wg sync.WaitGroup
		for _, p := range c.peers {
			if p.nc == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.shutdown(time.Second)
			}()
		}
		wg.Wait()
		if c.waitLog != "" {
			logErr = c.writeWaitLogs(c.waitLog)
		}
		c.fail(ErrClosed)
		close(c.stop)
		c.unmap()
	})
	return logErr
}

// Describe names the data plane for results files: the transport of each
// pair (shared memory between ranks on one host, TCP otherwise).
func (c *Comm) Describe() string {
	shm, tcp := c.Transports()
	switch {
	case shm == 0 && tcp == 0:
		return "partbench's ring communicator (one rank: no transport)"
	case shm == 0 && len(c.fallbacks) > 0:
		return fmt.Sprintf("tcp (partbench's ring communicator; transport %s: shared memory refused: %s)", c.transport, strings.Join(c.fallbacks, "; "))
	case shm == 0:
		return fmt.Sprintf("tcp (partbench's ring communicator; transport %s)", c.transport)
	}
	s := fmt.Sprintf("shm (partbench's ring communicator; transport %s: shared memory with %d same-host peer(s), TCP with %d", c.transport, shm, tcp)
	if len(c.fallbacks) > 0 {
		s += "; shared memory refused: " + strings.Join(c.fallbacks, "; ")
	}
	return s + ")"
}

// Transports counts this rank's peers by transport: shared memory, TCP.
func (c *Comm) Transports() (shm, tcp int) {
	for _, p := range c.peers {
		switch {
		case p.shm != nil:
			shm++
		case p.nc != nil:
			tcp++
		}
	}
	return shm, tcp
}
