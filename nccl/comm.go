package nccl

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/partbench/partbench/commcount"
)

// ErrAborted and ErrDestroyed are returned by calls on a closed Comm.
var (
	ErrAborted   = errors.New("nccl: communicator aborted")
	ErrDestroyed = errors.New("nccl: communicator destroyed")
)

const (
	stateOpen int32 = iota
	stateAborted
	stateDestroyed
)

// Comm is one rank's NCCL communicator.
//
// Every successful call is counted in Counter() under the commcount
// definitions: one call and its payload (count × element size; all_gather
// and reduce_scatter: the full nranks×count buffer; send/recv: the message),
// and the point-to-point messages this rank sends, recorded as the
// ring-equivalent pattern because NCCL's own choice of algorithm (ring,
// tree, NVLS, …) cannot be observed from the host: an all-reduce over n
// ranks is 2(n−1) messages from position p to position (p+1) mod n, with
// commcount.RingAllReduceWire's bytes; all_gather and reduce_scatter are
// n−1 messages of one shard; broadcast is one message of the buffer to
// the successor unless the successor is the root; send is one message;
// recv sends nothing. Peers are global ranks (WithGlobalRanks). Failed
// calls are not counted.
//
// Calls are made from one goroutine; only Abort, AsyncError and the
// watchdog (Watch) may run beside them.
type Comm struct {
	lib *Lib
	h   uintptr
	tally
	nonBlocking bool

	mu    sync.Mutex   // orders Abort/Destroy against the watchdog's polls
	state atomic.Int32 // stateOpen → stateAborted | stateDestroyed, once
	done  chan struct{}
}

// CommInitRank joins rank (0 ≤ rank < nranks) to the communicator named by
// id; every rank calls it with the same id and nranks. It blocks until all
// ranks have joined (non-blocking config: until the communicator is ready
// or WithContext's ctx is done).
func (l *Lib) CommInitRank(nranks int, id UniqueID, rank int, opts ...Option) (*Comm, error) {
	var o commOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(nranks, rank); err != nil {
		return nil, err
	}
	if o.config != nil {
		if !l.c.hasInitConfig() {
			return nil, fmt.Errorf("nccl: a communicator config needs ncclCommInitRankConfig (NCCL 2.14 or newer); %s is %s", l.Path(), l.version)
		}
		if o.config.needs217() && !l.version.AtLeast(2, 17, 0) {
			return nil, fmt.Errorf("nccl: CGA cluster size, CTA limits and net name need NCCL 2.17 or newer; %s is %s", l.Path(), l.version)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if o.setup != nil {
		if err := o.setup(); err != nil {
			return nil, fmt.Errorf("nccl: thread setup before ncclCommInitRank: %w", err)
		}
	}
	call := "ncclCommInitRank"
	var h uintptr
	var r Result
	if o.config != nil {
		call = "ncclCommInitRankConfig"
		h, r = l.c.commInitRankConfig(nranks, &id, rank, *o.config)
	} else {
		h, r = l.c.commInitRank(nranks, &id, rank)
	}
	if r != Success && r != InProgress {
		return nil, l.fail(call, r, 0)
	}
	c := &Comm{
		lib:         l,
		h:           h,
		tally:       tally{ctr: o.counter, ranks: o.ranks, pos: rank},
		nonBlocking: o.config != nil && o.config.NonBlocking,
		done:        make(chan struct{}),
	}
	if r == InProgress {
		if err := c.Wait(o.ctx); err != nil {
			c.Abort()
			return nil, fmt.Errorf("nccl: %s: %w", call, err)
		}
	}
	return c, nil
}

// Counter is where this communicator's calls are counted.
func (c *Comm) Counter() *commcount.Counter { return c.ctr }

// GlobalRanks is the global rank at each position of the communicator.
func (c *Comm) GlobalRanks() []int { return append([]int(nil), c.ranks...) }

// Count is the number of ranks (ncclCommCount).
func (c *Comm) Count() (int, error) {
	if err := c.usable("ncclCommCount"); err != nil {
		return 0, err
	}
	n, r := c.lib.c.commCount(c.h)
	if r != Success {
		return 0, c.fail("ncclCommCount", r)
	}
	return n, nil
}

// UserRank is this rank's position (ncclCommUserRank).
func (c *Comm) UserRank() (int, error) {
	if err := c.usable("ncclCommUserRank"); err != nil {
		return 0, err
	}
	n, r := c.lib.c.commUserRank(c.h)
	if r != Success {
		return 0, c.fail("ncclCommUserRank", r)
	}
	return n, nil
}

// LastError is the library's text for its most recent error
// (ncclGetLastError; "" when the library lacks it).
func (c *Comm) LastError() string { return c.lib.c.getLastError(c.handle()) }

// Destroy frees the communicator (ncclCommDestroy) and stops its
// watchdogs. Destroying an aborted or destroyed Comm does nothing.
func (c *Comm) Destroy() error {
	if !c.leave(stateDestroyed) {
		return nil
	}
	if r := c.lib.c.commDestroy(c.h); r != Success {
		return callError("ncclCommDestroy", r, c.lib.c.getLastError(0))
	}
	return nil
}

// Abort stops the communicator's outstanding work and frees it
// (ncclCommAbort); a call blocked on it returns. It may be called from
// any goroutine, while other calls are in flight. Aborting a closed Comm
// does nothing.
func (c *Comm) Abort() error {
	_, err := c.abort()
	return err
}

func (c *Comm) abort() (bool, error) {
	if !c.leave(stateAborted) {
		return false, nil
	}
	if r := c.lib.c.commAbort(c.h); r != Success {
		return true, callError("ncclCommAbort", r, c.lib.c.getLastError(0))
	}
	return true, nil
}

// leave moves an open Comm to state; false if it was not open.
func (c *Comm) leave(state int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.state.CompareAndSwap(stateOpen, state) {
		return false
	}
	close(c.done)
	return true
}

// handle is the comm for ncclGetLastError, 0 once it is freed.
func (c *Comm) handle() uintptr {
	if c.state.Load() != stateOpen {
		return 0
	}
	return c.h
}

func (c *Comm) usable(call string) error {
	switch c.state.Load() {
	case stateAborted:
		return fmt.Errorf("%w: cannot call %s", ErrAborted, call)
	case stateDestroyed:
		return fmt.Errorf("%w: cannot call %s", ErrDestroyed, call)
	}
	return nil
}

// fail builds a failed call's error; a failure after an abort says so.
func (c *Comm) fail(call string, r Result) error {
	err := callError(call, r, c.lib.c.getLastError(c.handle()))
	if c.state.Load() == stateAborted {
		return fmt.Errorf("%w (%w)", err, ErrAborted)
	}
	return err
}
