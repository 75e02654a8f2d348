package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/partbench/partbench/exec/retry"
)

// Defaults for Options.
const (
	DefaultJoinTimeout = 60 * time.Second
	DefaultHeartbeat   = time.Second
	DefaultLostAfter   = 5 * time.Second
)

// failLinger bounds how long rank 0 keeps telling late ranks why a join
// failed, and how long a rank that already knows it will fail tries to tell
// rank 0.
const failLinger = 2 * time.Second

// Options configures Join.
type Options struct {
	// Addr is rank 0's control address, host:port. Rank 0 listens on its
	// port: on the loopback address when host is one, else on every
	// interface; the other ranks dial it.
	Addr string
	// Rank is this process's global rank.
	Rank int
	// Size is the world size the run needs (the config's tp×pp).
	Size int
	// LaunchedSize is the number of ranks the launcher started (0: Size).
	// A difference is a world size mismatch, reported on every rank.
	LaunchedSize int
	// ConfigHash identifies the config; every rank must have rank 0's.
	ConfigHash string
	// JobID identifies the job (launch.Env.JobID; "" when no launcher names
	// one). Rank 0 refuses a rank whose job differs, naming both, and keeps
	// waiting for its own: two jobs on one port never join each other.
	JobID string
	// Hostname names this rank in errors (""; os.Hostname).
	Hostname string
	// JoinTimeout bounds the join on every rank (0: DefaultJoinTimeout): rank 0
	// waits at most this long for all ranks, the others dial at most this long
	// and wait at most a little longer for rank 0's answer.
	JoinTimeout time.Duration
	// Heartbeat is the interval between heartbeats (0: DefaultHeartbeat).
	Heartbeat time.Duration
	// LostAfter is the silence after which a rank counts as lost (0:
	// DefaultLostAfter); it must be at least twice Heartbeat.
	LostAfter time.Duration
	// Listener, on rank 0, is used instead of listening on Addr (tests pass a
	// listener on port 0 and give the others its address).
	Listener net.Listener
}

func (o *Options) normalize() error {
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = DefaultJoinTimeout
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.LostAfter <= 0 {
		o.LostAfter = max(DefaultLostAfter, 2*o.Heartbeat)
	}
	if o.LaunchedSize <= 0 {
		o.LaunchedSize = o.Size
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
	}
	switch {
	case o.Size < 1:
		return fmt.Errorf("rendezvous: world size %d must be at least 1", o.Size)
	case o.Rank < 0 || o.Rank >= max(o.Size, o.LaunchedSize):
		return fmt.Errorf("rendezvous: rank %d is outside a world of %d", o.Rank, max(o.Size, o.LaunchedSize))
	case o.LostAfter < 2*o.Heartbeat:
		return fmt.Errorf("rendezvous: lost-after %v must be at least twice the heartbeat %v", o.LostAfter, o.Heartbeat)
	case o.Addr == "" && !(o.Rank == 0 && o.Listener != nil):
		return errors.New("rendezvous: no rendezvous address")
	}
	return nil
}

// Join enters the run: rank 0 serves the rendezvous on opts.Addr, the other
// ranks dial it. It returns once every rank has joined and agreed on world
// size and config hash, or with an error on every rank that reached rank 0
// (and, on the others, after at most opts.JoinTimeout). ctx bounds only the
// join; the session lives until Close.
func Join(ctx context.Context, opts Options) (*Session, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	start := time.Now()
	var sizeErr error
	if opts.LaunchedSize != opts.Size {
		sizeErr = &JoinError{Reason: sizeMismatch(opts.Rank, opts.LaunchedSize, opts.Size)}
	}
	if opts.Size == 1 && sizeErr == nil {
		s := newSession(opts, []Peer{{Rank: 0, Host: opts.Hostname, PID: os.Getpid()}})
		s.localIP = "127.0.0.1"
		return s, nil
	}
	if opts.Rank == 0 {
		return join0(ctx, opts, start, sizeErr)
	}
	return joinPeer(ctx, opts, start, sizeErr)
}

func sizeMismatch(rank, launched, size int) string {
	return fmt.Sprintf("world size mismatch: rank %d was started with %d ranks, config needs %d", rank, launched, size)
}

// listenAddr is where rank 0 listens for addr: the address itself when its
// host is loopback, else the port on every interface (a host name may
// resolve to a different local address than the one the others reach).
func listenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("rendezvous: address %q is not host:port: %w", addr, err)
	}
	if isLoopback(host) {
		return addr, nil
	}
	return net.JoinHostPort("", port), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hello is what rank 0 learned from one dialing rank.
type hello struct {
	c       *conn
	f       *frame
	version uint32
}

// join0 is rank 0's side of the join.
func join0(ctx context.Context, o Options, start time.Time, sizeErr error) (*Session, error) {
	ln := o.Listener
	if ln == nil {
		la, err := listenAddr(o.Addr)
		if err != nil {
			return nil, err
		}
		if ln, err = net.Listen("tcp", la); err != nil {
			hint := ""
			if errors.Is(err, syscall.EADDRINUSE) {
				hint = " (" + describeHolder(ctx, dialAddr(o.Addr)) + ": set MASTER_PORT or --rendezvous to a free port)"
			}
			return nil, fmt.Errorf("rendezvous: rank 0 cannot listen on %s for job %s: %w%s", la, jobName(o.JobID), err, hint)
		}
	}
	defer ln.Close()
	addr := o.Addr
	if addr == "" {
		addr = ln.Addr().String()
	}
	deadline := start.Add(o.JoinTimeout)
	quit := make(chan struct{})
	defer close(quit)
	hellos := make(chan hello)
	holder := &frame{Type: tHolder, Job: o.JobID, Host: o.Hostname, PID: os.Getpid(), Size: o.Size}
	go acceptHellos(ln, hellos, quit, deadline.Add(failLinger), holder)

	joined := make([]*conn, o.Size)
	var told []*conn // every connection that said hello, to answer
	var refused []string
	failure := sizeErr
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for n := 1; failure == nil && n < o.Size; {
		select {
		case h := <-hellos:
			if h.version == ProtocolVersion && h.f.Job != o.JobID {
				refused = append(refused, fmt.Sprintf("rank %d of job %s", h.f.Rank, jobName(h.f.Job)))
				go refuse(h.c, strangerReason(o, addr, h.f))
				continue
			}
			told = append(told, h.c)
			if failure = check(o, joined, h); failure == nil {
				joined[h.f.Rank] = h.c
				n++
			}
		case <-timer.C:
			failure = &JoinError{Reason: timeoutReason(o, addr, joined) + refusedNote(refused)}
		case <-ctx.Done():
			failure = &JoinError{Reason: fmt.Sprintf("rank 0 gave up the join: %v", ctx.Err())}
		}
	}
	if failure != nil {
		reason := failure.Error()
		if je, ok := failure.(*JoinError); ok {
			reason = je.Reason
		}
		// Tell everyone who came, then anyone who comes within the linger,
		// and return only once the answers are out (the process may exit).
		var wg sync.WaitGroup
		tell := func(c *conn) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = writePreambleAndFrame(c, &frame{Type: tFail, Reason: reason}, time.Second)
				_ = c.nc.Close()
			}()
		}
		for _, c := range told {
			tell(c)
		}
		linger := time.NewTimer(min(time.Until(deadline), failLinger))
		defer linger.Stop()
	wait:
		for n := len(told); n < o.LaunchedSize-1; n++ {
			select {
			case h := <-hellos:
				if h.version == ProtocolVersion && h.f.Job != o.JobID {
					go refuse(h.c, strangerReason(o, addr, h.f))
					n--
					continue
				}
				tell(h.c)
			case <-linger.C:
				break wait
			case <-ctx.Done():
				break wait
			}
		}
		wg.Wait()
		return nil, failure
	}

	peers := make([]Peer, o.Size)
	peers[0] = Peer{Rank: 0, Host: o.Hostname, PID: os.Getpid()}
	for r := 1; r < o.Size; r++ {
		peers[r] = Peer{Rank: r, Host: joined[r].host, PID: joined[r].pid}
	}
	s := newSession(o, peers)
	if tcp, ok := joined[1].nc.LocalAddr().(*net.TCPAddr); ok {
		s.localIP = tcp.IP.String()
	}
	ok := &frame{Type: tOK, Peers: peers}
	errs := make(chan error, o.Size)
	for r := 1; r < o.Size; r++ {
		c := joined[r]
		s.conns[r] = c
		go func() { errs <- writePreambleAndFrame(c, ok, o.LostAfter) }()
	}
	for r := 1; r < o.Size; r++ {
		<-errs // a rank that died meanwhile shows as lost in the session
	}
	s.start()
	return s, nil
}

func writePreambleAndFrame(c *conn, f *frame, timeout time.Duration) error {
	b, err := encode(f)
	if err != nil {
		return err
	}
	return c.writeRaw(append(preamble(), b...), timeout)
}

// acceptHellos reads the preamble and hello of every connection; strangers
// (not a partbench preamble) are dropped.
func acceptHellos(ln net.Listener, out chan<- hello, quit <-chan struct{}, deadline time.Time, holder *frame) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return // listener closed
		}
		go func() {
			d := time.Now().Add(10 * time.Second)
			if deadline.Before(d) {
				d = deadline
			}
			_ = nc.SetDeadline(d)
			c := newConn(nc)
			v, err := readPreamble(c.rd)
			if err != nil {
				_ = nc.Close()
				return
			}
			f := &frame{Type: tHello}
			if v == ProtocolVersion {
				if f, err = c.readFrame(); err == nil && f.Type == tWho {
					_ = writePreambleAndFrame(c, holder, time.Second)
					_ = nc.Close()
					return
				}
				if err != nil || f.Type != tHello {
					_ = nc.Close()
					return
				}
			}
			c.rank, c.host, c.pid = f.Rank, f.Host, f.PID
			select {
			case out <- hello{c: c, f: f, version: v}:
			case <-quit:
				_ = nc.Close()
			}
		}()
	}
}

// check validates one hello against rank 0's options and the ranks so far.
func check(o Options, joined []*conn, h hello) error {
	f := h.f
	who := fmt.Sprintf("rank %d (%s, pid %d)", f.Rank, f.Host, f.PID)
	fail := func(format string, a ...any) error { return &JoinError{Reason: fmt.Sprintf(format, a...)} }
	switch {
	case h.version != ProtocolVersion:
		return fail("a rank at %s speaks rendezvous protocol v%d, rank 0 speaks v%d (mixed partbench builds?)",
			h.c.nc.RemoteAddr(), h.version, ProtocolVersion)
	case f.Launched != f.Size:
		return fail("%s", sizeMismatch(f.Rank, f.Launched, f.Size))
	case f.Size != o.Size:
		return fail("world size mismatch: rank %d needs %d ranks, rank 0 needs %d (different configs?)", f.Rank, f.Size, o.Size)
	case f.Rank == 0:
		return fail("two processes claim rank 0: %s (pid %d) and %s (pid %d)", o.Hostname, os.Getpid(), f.Host, f.PID)
	case f.Rank < 0 || f.Rank >= o.Size:
		return fail("%s is outside a world of %d", who, o.Size)
	case joined[f.Rank] != nil:
		c := joined[f.Rank]
		return fail("duplicate rank %d: %s (pid %d) and %s (pid %d)", f.Rank, c.host, c.pid, f.Host, f.PID)
	case f.Hash != o.ConfigHash:
		return fail("config hash mismatch: %s has %s, rank 0 has %s", who, short(f.Hash), short(o.ConfigHash))
	}
	return nil
}

func short(h string) string {
	if h == "" {
		return "none"
	}
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func timeoutReason(o Options, addr string, joined []*conn) string {
	var missing []string
	n := 1
	for r := 1; r < o.Size; r++ {
		if joined[r] != nil {
			n++
			continue
		}
		if len(missing) < 8 {
			missing = append(missing, strconv.Itoa(r))
		} else if len(missing) == 8 {
			missing = append(missing, "…")
		}
	}
	noun := "rank"
	if len(missing) > 1 {
		noun = "ranks"
	}
	return fmt.Sprintf("timed out after %v waiting at %s: %d of %d ranks joined, missing %s %s",
		o.JoinTimeout, addr, n, o.Size, noun, strings.Join(missing, ", "))
}

// joinPeer is the side of every rank but 0.
func joinPeer(ctx context.Context, o Options, start time.Time, sizeErr error) (*Session, error) {
	deadline := start.Add(o.JoinTimeout)
	dialDeadline := deadline
	if sizeErr != nil { // tell rank 0, but do not wait long: this rank fails anyway
		dialDeadline = start.Add(min(o.JoinTimeout, failLinger))
	}
	nc, err := dialRetry(ctx, o.Addr, dialDeadline)
	if err != nil {
		if sizeErr != nil {
			return nil, sizeErr
		}
		hint := ""
		if host, _, _ := net.SplitHostPort(o.Addr); isLoopback(host) {
			hint = " (a loopback address reaches rank 0 only on this host; on several nodes set MASTER_ADDR to rank 0's host)"
		}
		return nil, fmt.Errorf("rendezvous: rank %d cannot reach rank 0 at %s within %v: %w%s", o.Rank, o.Addr, o.JoinTimeout, err, hint)
	}
	c := newConn(nc)
	c.rank = 0
	replyDeadline := deadline.Add(min(o.JoinTimeout, 5*time.Second))
	if sizeErr != nil {
		replyDeadline = time.Now().Add(time.Second)
	}
	_ = nc.SetDeadline(replyDeadline)
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	fail := func(err error) (*Session, error) {
		_ = nc.Close()
		if sizeErr != nil {
			return nil, sizeErr
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rendezvous: rank %d gave up the join: %w", o.Rank, ctx.Err())
		}
		return nil, err
	}
	hi := &frame{Type: tHello, Rank: o.Rank, Size: o.Size, Launched: o.LaunchedSize, Hash: o.ConfigHash, Job: o.JobID, Host: o.Hostname, PID: os.Getpid()}
	b, err := encode(hi)
	if err != nil {
		return fail(err)
	}
	if err := c.writeRaw(append(preamble(), b...), time.Until(replyDeadline)); err != nil {
		return fail(fmt.Errorf("rendezvous: rank %d lost rank 0 at %s during the join: %w", o.Rank, o.Addr, err))
	}
	v, err := readPreamble(c.rd)
	if err == nil && v != ProtocolVersion {
		return fail(fmt.Errorf("rendezvous: rank 0 at %s speaks rendezvous protocol v%d, rank %d speaks v%d (mixed partbench builds?)", o.Addr, v, o.Rank, ProtocolVersion))
	}
	var f *frame
	if err == nil {
		f, err = c.readFrame()
	}
	switch {
	case errors.Is(err, errNotRendezvous):
		return fail(fmt.Errorf("rendezvous: %s is not a partbench rendezvous (another service on the port?)", o.Addr))
	case isTimeout(err):
		return fail(fmt.Errorf("rendezvous: rank %d reached rank 0 at %s but the world was not complete within %v", o.Rank, o.Addr, time.Since(start).Round(time.Millisecond)))
	case err != nil:
		return fail(fmt.Errorf("rendezvous: rank %d lost rank 0 at %s during the join: %v", o.Rank, o.Addr, err))
	case f.Type == tFail:
		return fail(&JoinError{Reason: f.Reason})
	case f.Type != tOK || len(f.Peers) != o.Size:
		return fail(fmt.Errorf("rendezvous: rank %d got a malformed %q answer from rank 0", o.Rank, f.Type))
	}
	if sizeErr != nil {
		return fail(sizeErr)
	}
	_ = nc.SetDeadline(time.Time{})
	c.host, c.pid = f.Peers[0].Host, f.Peers[0].PID
	s := newSession(o, f.Peers)
	s.conns[0] = c
	if tcp, ok := nc.LocalAddr().(*net.TCPAddr); ok {
		s.localIP = tcp.IP.String()
	}
	s.start()
	return s, nil
}

// dialRetry dials addr with backoff until it connects or deadline passes.
func dialRetry(ctx context.Context, addr string, deadline time.Time) (net.Conn, error) {
	var nc net.Conn
	err := dialBackoff.Do(ctx, deadline, func() error {
		d := net.Dialer{Timeout: min(time.Until(deadline), 2*time.Second)}
		c, err := d.DialContext(ctx, "tcp", addr)
		nc = c
		return err
	})
	switch {
	case err == nil:
		return nc, nil
	case errors.Is(err, retry.ErrNoTime):
		return nil, errors.New("no time to dial")
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, err
}

// dialBackoff is the wait between attempts to reach rank 0.
var dialBackoff = retry.Backoff{First: 20 * time.Millisecond, Max: 500 * time.Millisecond}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
