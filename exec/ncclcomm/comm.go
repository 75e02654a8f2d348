package ncclcomm

import (
	"context"
	"errors"
	"fmt"
	"github.com/partbench/partbench/cgo/dl"
	"sync"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/nccl"
	"github.com/partbench/partbench/partition"
)

// DefaultWatchInterval is how often each communicator's watchdog asks NCCL
// for an asynchronous error.
const DefaultWatchInterval = 100 * time.Millisecond

// ErrClosed is returned by calls on a closed Comm.
var ErrClosed = errors.New("ncclcomm: communicator closed")

// Options adjusts NewWith.
type Options struct {
	// Lib is the NCCL library (nil: libnccl.so.2, found as dl.NCCL says and
	// loaded once per process). The caller keeps ownership of a Lib it gives.
	Lib *nccl.Lib
	// WatchInterval is the watchdogs' poll period (0: DefaultWatchInterval).
	WatchInterval time.Duration
	// Counter is where the world and group communicators count (nil: a new
	// one); Counter returns it.
	Counter *commcount.Counter
	// Blocking makes blocking communicators even where the library has
	// ncclCommInitRankConfig (NCCL ≥ 2.14). Non-blocking ones, the default
	// there, let ctx interrupt a communicator's creation; a blocking
	// ncclCommInitRank waits for every member however long it takes.
	Blocking bool
}

// Comm is an exec.Comm over NCCL for one rank: a world communicator for
// point-to-point messages, one communicator per tensor-parallel group
// (NewGroup), and a world communicator of its own for Barrier, whose
// calls are not counted. Every call is queued on the rank's stream
// (pcuda.Compute.Stream) through Compute.Do, so it runs on a pinned OS
// thread with the rank's context current and is ordered with the rank's
// kernels: a kernel queued after a Recv sees the data, and one queued
// after a Send may overwrite the sent buffer. Flush and Barrier wait for
// the stream.
//
// Counts: the world and group communicators share one commcount.Counter
// (Counter) with global ranks as peers, so a Program run through exec
// counts exactly plan.Counts of it when the buffers' element type is the
// plan's (fp16 or bf16 activations, fp32 tokens).
//
// Failures: a watchdog per communicator polls NCCL every WatchInterval and
// aborts all of the rank's communicators when one reports an asynchronous
// error or when New's ctx is done (the run loop cancels it when the
// session reports a lost rank); a call abandoned through its own ctx does
// the same. The blocked call, or the stream synchronization in Flush or
// Barrier, then returns, and every later call fails with the first cause.
//
// Calls are made from one goroutine, in Program order (exec.Comm): a Send
// that the Program follows with a Recv stays in an open NCCL group until
// the next call (p2p.go), so kernels queued in between, outside Program
// order, would run before the send.
type Comm struct {
	rank, size  int
	compute     *pcuda.Compute
	lib         *nccl.Lib
	ctx         context.Context // the communicators' life: done → watchdogs abort
	interval    time.Duration
	nonBlocking bool
	counter     *commcount.Counter
	ids         *idSet
	fused       map[sendKey]bool

	world, barrier *nccl.Comm
	scratch        cuda.DevicePtr // the barrier's one float

	// The rank's goroutine only.
	clean bool // nothing queued since the last Flush or Barrier

	mu      sync.Mutex
	comms   []*nccl.Comm
	groups  map[string]*Group
	failErr error
	failed  chan struct{} // closed with the first failure
	watches sync.WaitGroup

	// An NCCL group left open by a Send that the Program follows with a
	// Recv (p2p.go); an abort waits for it to close, since the group holds
	// the communicator.
	gmu      sync.Mutex
	inGroup  bool
	abortDue bool

	closeOnce sync.Once
	closeErr  error
}

var _ pexec.Comm = (*Comm)(nil)

// New makes rank's communicators for plan on compute's device: rank 0
// creates a unique id for the world communicator, the barrier's and every
// group of the plan (PlanGroups), and sess broadcasts them, so every rank
// must call New at the same point of its run. The world and barrier
// communicators are created here; each group's when its members call
// NewGroup. ctx is the communicators' life: when it is done, they are
// aborted.
func New(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, compute *pcuda.Compute) (*Comm, error) {
	if sess == nil {
		return nil, errors.New("ncclcomm: no rendezvous session")
	}
	return NewWith(ctx, sess, plan, rank, compute, Options{})
}

// NewWith is New with any control plane and options (tests pass an
// in-process Broadcaster and a fake library).
func NewWith(ctx context.Context, b Broadcaster, plan *partition.Plan, rank int, compute *pcuda.Compute, opts Options) (*Comm, error) {
	if plan == nil || compute == nil {
		return nil, errors.New("ncclcomm: a plan and the rank's compute backend are required")
	}
	size := plan.Size()
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("ncclcomm: rank %d outside the plan's %d ranks", rank, size)
	}
	lib := opts.Lib
	if lib == nil {
		var err error
		if lib, err = loadLib(); err != nil {
			return nil, fmt.Errorf("ncclcomm: %w", err)
		}
	}
	v, err := lib.Version()
	if err != nil {
		return nil, fmt.Errorf("ncclcomm: %w", err)
	}
	c := &Comm{
		rank: rank, size: size, compute: compute, lib: lib, ctx: ctx,
		interval:    opts.WatchInterval,
		nonBlocking: !opts.Blocking && lib.HasInitConfig(),
		counter:     opts.Counter,
		fused:       fusedSends(plan, rank),
		groups:      map[string]*Group{},
		failed:      make(chan struct{}),
	}
	if c.interval <= 0 {
		c.interval = DefaultWatchInterval
	}
	if c.counter == nil {
		c.counter = commcount.New()
	}
	groups := PlanGroups(plan)
	var mine *idSet
	if rank == 0 {
		if mine, err = makeIDs(lib, v.String(), groups); err != nil {
			return nil, fmt.Errorf("ncclcomm: %w", err)
		}
	}
	if c.ids, err = shareIDs(ctx, b, rank, mine, v.String(), groups); err != nil {
		return nil, fmt.Errorf("ncclcomm: rank %d: %w", rank, err)
	}
	if err := c.init(ctx); err != nil {
		c.abortAll()
		c.free()
		c.watches.Wait()
		return nil, fmt.Errorf("ncclcomm: rank %d: %w", rank, err)
	}
	dl.FixSignalStacks() // handlers NCCL installed while initialising
	return c, nil
}

// init creates the world and barrier communicators (in that order on
// every rank) and the barrier's device float.
func (c *Comm) init(ctx context.Context) error {
	return c.compute.Do(func() error {
		var err error
		if c.world, err = c.newComm(ctx, c.size, uniqueID(c.ids.World), c.rank, nil, c.counter); err != nil {
			return fmt.Errorf("world communicator: %w", err)
		}
		// Its own counter: a barrier is no communication op of a Program.
		if c.barrier, err = c.newComm(ctx, c.size, uniqueID(c.ids.Barrier), c.rank, nil, commcount.New()); err != nil {
			return fmt.Errorf("barrier communicator: %w", err)
		}
		drv := c.compute.Context().Driver()
		if c.scratch, err = drv.MemAlloc(4); err != nil {
			return err
		}
		if err := c.compute.Stream().MemsetD8Async(c.scratch, 0, 4); err != nil {
			return err
		}
		if err := c.compute.Stream().Synchronize(); err != nil {
			return err
		}
		c.clean = true
		return nil
	})
}

// newComm creates one communicator on the calling (pinned) thread, counted
// in ctr, and starts its watchdog. ranks are the members' global ranks
// (nil: the world).
func (c *Comm) newComm(ctx context.Context, n int, id nccl.UniqueID, pos int, ranks []int, ctr *commcount.Counter) (*nccl.Comm, error) {
	opts := []nccl.Option{nccl.WithCounter(ctr), nccl.WithThreadSetup(c.compute.Context().SetCurrent)}
	if ranks != nil {
		opts = append(opts, nccl.WithGlobalRanks(ranks))
	}
	if c.nonBlocking {
		opts = append(opts, nccl.WithConfig(nccl.Config{NonBlocking: true}), nccl.WithContext(ctx))
	}
	nc, err := c.lib.CommInitRank(n, id, pos, opts...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.comms = append(c.comms, nc)
	c.mu.Unlock()
	watch := nc.Watch(c.ctx, c.interval)
	c.watches.Add(1)
	go func() {
		defer c.watches.Done()
		if err := <-watch; err != nil {
			c.fail(fmt.Errorf("ncclcomm: rank %d: %w", c.rank, err), true)
		}
	}()
	return nc, nil
}

// Rank and Size are this rank's global identity.
func (c *Comm) Rank() int { return c.rank }
func (c *Comm) Size() int { return c.size }

// Counter is where the world and group communicators count every call.
func (c *Comm) Counter() *commcount.Counter { return c.counter }

// fail records the first failure; with abort, it aborts every
// communicator (at once, or when an open NCCL group closes).
func (c *Comm) fail(err error, abort bool) {
	c.mu.Lock()
	if c.failErr == nil {
		c.failErr = err
		close(c.failed)
	}
	c.mu.Unlock()
	if abort {
		c.abortAll()
	}
}

func (c *Comm) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failErr
}

// abortAll aborts every communicator (ncclCommAbort, safe beside a call in
// flight), unless an NCCL group is open: then endGroup does it.
func (c *Comm) abortAll() {
	c.gmu.Lock()
	defer c.gmu.Unlock()
	if c.inGroup {
		c.abortDue = true
		return
	}
	c.mu.Lock()
	comms := append([]*nccl.Comm(nil), c.comms...)
	c.mu.Unlock()
	for _, nc := range comms {
		_ = nc.Abort()
	}
}

// call runs fn on the rank's pinned thread. A call whose ctx is done
// before it returns aborts the communicators (the others could not
// complete what it started), so a stream synchronization returns too.
// After a failure, every call returns it.
func (c *Comm) call(ctx context.Context, what string, fn func() error) error {
	if err := c.failure(); err != nil {
		return fmt.Errorf("ncclcomm: rank %d: %s: %w", c.rank, what, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ncclcomm: rank %d: %s: %w", c.rank, what, err)
	}
	stop := context.AfterFunc(ctx, func() {
		c.fail(fmt.Errorf("ncclcomm: rank %d: %s abandoned: %w", c.rank, what, context.Cause(ctx)), true)
	})
	err := c.compute.Do(fn)
	stop()
	if errors.Is(err, nccl.ErrAborted) && c.failure() == nil {
		// A watchdog aborts first and then reports why: wait for the cause.
		select {
		case <-c.failed:
		case <-time.After(time.Second):
		}
	}
	if f := c.failure(); f != nil {
		return fmt.Errorf("ncclcomm: rank %d: %s: %w", c.rank, what, f)
	}
	if err != nil {
		return fmt.Errorf("ncclcomm: rank %d: %s: %w", c.rank, what, err)
	}
	return nil
}

// settle waits, on a non-blocking communicator, until the call just made
// has been queued.
func (c *Comm) settle(ctx context.Context, nc *nccl.Comm) error {
	if !c.nonBlocking {
		return nil
	}
	return nc.Wait(ctx)
}

// device is buf as this rank's device buffer, with its NCCL data type.
func (c *Comm) device(buf pexec.Buffer, what string) (*pcuda.Buffer, nccl.DataType, error) {
	b, ok := buf.(*pcuda.Buffer)
	if !ok {
		return nil, 0, fmt.Errorf("ncclcomm: rank %d: %s: %T is not a device buffer of exec/cuda", c.rank, what, buf)
	}
	if b.Compute() != c.compute {
		return nil, 0, fmt.Errorf("ncclcomm: rank %d: %s: buffer %v belongs to another compute backend", c.rank, what, b)
	}
	var dt nccl.DataType
	switch b.DataType() {
	case cuda.R16F:
		dt = nccl.Float16
	case cuda.R16BF:
		dt = nccl.Bfloat16
	case cuda.R32F:
		dt = nccl.Float32
	default:
		return nil, 0, fmt.Errorf("ncclcomm: rank %d: %s: buffer %v has element type %v, which NCCL is not given here", c.rank, what, b, b.DataType())
	}
	return b, dt, nil
}

func (c *Comm) stream() uintptr { return c.compute.Stream().Handle() }

// Flush waits until everything queued on the rank's stream is done, every
// posted Send included (it has then been received: NCCL's sends complete
// with their receives).
func (c *Comm) Flush(ctx context.Context) error {
	err := c.call(ctx, "flush", func() error {
		if err := c.endGroup(ctx); err != nil {
			return err
		}
		return c.compute.Stream().Synchronize()
	})
	c.clean = err == nil
	return err
}

// Barrier returns when every rank has entered it and the rank's stream is
// drained: a one-float all-reduce over all ranks on the barrier
// communicator, not counted (it is no communication op of a Program).
func (c *Comm) Barrier(ctx context.Context) error {
	err := c.call(ctx, "barrier", func() error {
		if err := c.endGroup(ctx); err != nil {
			return err
		}
		if err := c.barrier.AllReduce(uintptr(c.scratch), uintptr(c.scratch), 1, nccl.Float32, nccl.Sum, c.stream()); err != nil {
			return err
		}
		if err := c.settle(ctx, c.barrier); err != nil {
			return err
		}
		return c.compute.Stream().Synchronize()
	})
	c.clean = err == nil
	return err
}

// Close releases every communicator: destroyed (ncclCommDestroy) after a
// Flush or Barrier that left nothing queued, aborted otherwise, since a
// destroy waits for queued work that a failed peer never completes. Later
// calls fail with ErrClosed. The library stays loaded. Close the Comm
// before the Compute whose context and stream it uses.
func (c *Comm) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		if c.inGroup {
			errs = append(errs, c.compute.Do(func() error { return c.endGroup(context.Background()) }))
		}
		abort := !c.clean || c.failure() != nil
		c.fail(ErrClosed, false)
		c.mu.Lock()
		comms := append([]*nccl.Comm(nil), c.comms...)
		c.mu.Unlock()
		errs = append(errs, c.compute.Do(func() error {
			var errs []error
			for _, nc := range comms {
				if abort {
					errs = append(errs, nc.Abort())
				} else {
					errs = append(errs, nc.Destroy())
				}
			}
			return errors.Join(errs...)
		}))
		errs = append(errs, c.free())
		c.watches.Wait()
		if err := errors.Join(errs...); err != nil {
			c.closeErr = fmt.Errorf("ncclcomm: rank %d: close: %w", c.rank, err)
		}
	})
	return c.closeErr
}

// free releases the barrier's device float.
func (c *Comm) free() error {
	if c.scratch == 0 {
		return nil
	}
	p := c.scratch
	c.scratch = 0
	return c.compute.Do(func() error { return c.compute.Context().Driver().MemFree(p) })
}

// Describe names the data plane for results files: NCCL and its version.
func (c *Comm) Describe() string {
	return fmt.Sprintf("nccl %s (%s)", c.ids.Version, c.lib.Path())
}
