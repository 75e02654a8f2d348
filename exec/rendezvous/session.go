package rendezvous

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"
)

// Session is one rank's membership in a run. Rank 0 holds a control
// connection to every other rank; the others hold one to rank 0. The
// connections stay open, with heartbeats, until Close.
//
// Collectives (AllGather, Broadcast, Barrier, Gather) are made by every rank
// in the same order, from one goroutine; a collective abandoned through ctx
// aborts the session, since the other ranks could not complete it.
type Session struct {
	o       Options
	rank    int
	size    int
	peers   []Peer
	localIP string
	conns   []*conn // rank 0: every other rank; others: conns[0] only

	collMu sync.Mutex // serializes collectives
	seq    uint64     // the last collective's number (under collMu)

	mu       sync.Mutex
	slots    map[uint64]*slot // collectives in progress, by number
	departed map[int]bool     // ranks that closed cleanly (rank 0 only)
	ended    bool
	err      error
	closedBy string        // "rank 0" when rank 0 closed the session cleanly
	done     chan struct{} // closed when the session ends, cleanly or not
	lastTick time.Time     // this process's own clock: the watch's last tick
	stall    time.Duration // the longest gap between two ticks, when over the threshold
	stallAt  time.Time     // when that gap ended
	torn     chan struct{} // closed when every connection is shut down

	pingMu  sync.Mutex // one clock ping at a time (ranks other than 0)
	pingSeq uint64     // the last ping's number (under pingMu)
	pongs   chan pong  // rank 0's answers, from the read loop
}

// slot collects the frames of one collective: contributions on rank 0, the
// result on the others.
type slot struct {
	need   int
	frames map[int]*frame
	ready  chan struct{}
	closed bool
	err    error
}

func (sl *slot) finish(err error) {
	if !sl.closed {
		sl.closed, sl.err = true, err
		close(sl.ready)
	}
}

func newSession(o Options, peers []Peer) *Session {
	return &Session{
		o: o, rank: o.Rank, size: o.Size, peers: peers,
		conns: make([]*conn, o.Size), slots: map[uint64]*slot{}, departed: map[int]bool{},
		done: make(chan struct{}), torn: make(chan struct{}), pongs: make(chan pong, 1),
	}
}

// Rank is this process's global rank.
func (s *Session) Rank() int { return s.rank }

// Size is the world size.
func (s *Session) Size() int { return s.size }

// Peers lists every rank's host and pid, by rank.
func (s *Session) Peers() []Peer { return append([]Peer(nil), s.peers...) }

// JobID is the job's identity as Join was given it (Options.JobID: the
// launcher's job id; "" when no launcher names the job).
func (s *Session) JobID() string { return s.o.JobID }

// LocalIP is this host's address on the control connection (the interface
// that reaches rank 0, or that the others reached on rank 0): a good address
// to advertise for the data plane.
func (s *Session) LocalIP() string { return s.localIP }

// Done is closed when the session ends: a failure (Err then says which) or a
// clean close, here or by rank 0.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is the first failure: a *LostRankError, an *AbortError, or nil while
// the session runs and after a clean close.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// start runs the read loop and the heartbeat of every connection.
func (s *Session) start() {
	hb, _ := encode(&frame{Type: tHeartbeat})
	for _, c := range s.conns {
		if c == nil {
			continue
		}
		_ = c.nc.SetDeadline(time.Time{})
		c.idle.idle = s.o.LostAfter
		go s.readLoop(c)
		go s.heartbeat(c, hb)
	}
	s.mu.Lock()
	s.lastTick = time.Now()
	s.mu.Unlock()
	go s.watch()
}

// watch ticks with the heartbeat so that this rank can tell when it was
// itself not running (SIGSTOP, a frozen VM, a starved host): the monotonic
// clock runs on while the process is stopped, so a gap between two ticks is
// the time it did not run, and during it it sent no heartbeat either.
func (s *Session) watch() {
	t := time.NewTicker(s.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			now = time.Now()
			s.mu.Lock()
			if gap := now.Sub(s.lastTick); gap > s.stallThreshold() {
				s.stall, s.stallAt = gap, now
			}
			s.lastTick = now
			s.mu.Unlock()
		}
	}
}

// stallThreshold is how long this process may go without running before a
// connection failure is blamed on it rather than on the peer: half the
// silence after which the others count it lost.
func (s *Session) stallThreshold() time.Duration { return s.o.LostAfter / 2 }

// selfStall returns how long this process was recently not running (0: it
// ran). Either the watch has not ticked since it resumed, or its last gap
// ended within LostAfter.
func (s *Session) selfStall() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.lastTick.IsZero() {
		return 0
	}
	if gap := now.Sub(s.lastTick); gap > s.stallThreshold() {
		return gap
	}
	if s.stall > 0 && now.Sub(s.stallAt) < s.o.LostAfter {
		return s.stall
	}
	return 0
}

func (s *Session) heartbeat(c *conn, hb []byte) {
	t := time.NewTicker(s.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.stopHB.ch:
			return
		case <-t.C:
			if err := c.writeRaw(hb, s.o.LostAfter); err != nil {
				s.connLost(c, err)
				return
			}
		}
	}
}

func (s *Session) readLoop(c *conn) {
	defer close(c.readerDone)
	for {
		f, err := c.readFrame()
		if err != nil {
			s.connLost(c, err)
			return
		}
		switch {
		case f.Type == tHeartbeat:
		case f.Type == tPing && s.rank == 0:
			s.onPing(c, f)
		case f.Type == tPong && s.rank != 0:
			s.onPong(f, time.Now())
		case f.Type == tColl && s.rank == 0:
			s.deliver(f.Seq, c.rank, f)
		case f.Type == tResult && s.rank != 0:
			s.deliver(f.Seq, 0, f)
		case f.Type == tAbort:
			s.onAbort(c, f)
		case f.Type == tBye:
			s.onBye(c)
		default:
			s.fail(fmt.Sprintf("protocol error: unexpected %q frame from rank %d", f.Type, c.rank), -1)
		}
	}
}

// describe says how a connection failed, for a LostRankError.
func (s *Session) describe(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "connection broken"
	case isTimeout(err):
		return fmt.Sprintf("no message for %v", s.o.LostAfter)
	}
	return err.Error()
}

// connLost handles a connection that failed: not a failure after a goodbye
// or once the session has ended; otherwise the remote rank is lost.
func (s *Session) connLost(c *conn, err error) {
	if c.bye.isSet() {
		return
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return
	}
	lost := &LostRankError{Rank: c.rank, Host: c.host, PID: c.pid, Cause: s.describe(err)}
	if st := s.selfStall(); st > 0 {
		stalled := &StalledError{Rank: s.rank, For: st, LostAfter: s.o.LostAfter, Seen: lost}
		s.end(stalled, &frame{Type: tAbort, Origin: s.rank, Reason: stalled.Error()}, -1)
		return
	}
	if s.rank != 0 {
		s.end(lost, nil, -1)
		return
	}
	r := c.rank
	s.end(lost, &frame{Type: tAbort, Origin: 0, Lost: &r, Host: c.host, PID: c.pid, Reason: lost.Cause}, r)
}

func (s *Session) onAbort(c *conn, f *frame) {
	if s.rank == 0 { // a rank aborted: tell the others
		s.end(&AbortError{Rank: c.rank, Reason: f.Reason},
			&frame{Type: tAbort, Origin: c.rank, Reason: f.Reason}, c.rank)
		return
	}
	if f.Lost != nil {
		s.end(&LostRankError{Rank: *f.Lost, Host: f.Host, PID: f.PID, Cause: f.Reason, Forwarded: true}, nil, -1)
		return
	}
	s.end(&AbortError{Rank: f.Origin, Reason: f.Reason}, nil, -1)
}

func (s *Session) onBye(c *conn) {
	c.bye.set()
	if s.rank != 0 { // rank 0 closed cleanly: the session is over
		s.mu.Lock()
		s.closedBy = "rank 0"
		s.mu.Unlock()
		s.end(nil, nil, -1)
		return
	}
	s.mu.Lock()
	s.departed[c.rank] = true
	for seq, sl := range s.slots {
		if _, ok := sl.frames[c.rank]; !ok {
			sl.finish(s.departedErr(c.rank, seq))
		}
	}
	s.mu.Unlock()
	go c.shutdown(time.Second)
}

func (s *Session) departedErr(rank int, seq uint64) error {
	return &AbortError{Rank: 0, Reason: fmt.Sprintf("rank %d closed its session before collective #%d", rank, seq)}
}

// fail ends the session with a failure this rank found, and tells the
// others (through rank 0).
func (s *Session) fail(reason string, skip int) {
	s.end(&AbortError{Rank: s.rank, Reason: reason}, &frame{Type: tAbort, Origin: s.rank, Reason: reason}, skip)
}

// end ends the session once: err nil is a clean end. note, if any, is sent
// to every connection but skip's first (at most a second per connection, in
// parallel): the news must be out before Done closes, since a process
// usually exits soon after.
func (s *Session) end(err error, note *frame, skip int) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.mu.Unlock()
	if note != nil {
		s.notify(note, skip)
	}
	s.mu.Lock()
	s.err = err
	close(s.done)
	s.mu.Unlock()
	go s.teardown()
}

// notify sends note to every rank but skip, in parallel, and returns when
// all are sent or after a second (a write stuck behind a heartbeat to a
// frozen rank finishes, or fails, on its own).
func (s *Session) notify(note *frame, skip int) {
	b, err := encode(note)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for r, c := range s.conns {
		if c == nil || r == skip || c.bye.isSet() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.writeRaw(b, time.Second)
		}()
	}
	sent := make(chan struct{})
	go func() { wg.Wait(); close(sent) }()
	select {
	case <-sent:
	case <-time.After(time.Second):
	}
}

func (s *Session) teardown() {
	var wg sync.WaitGroup
	for _, c := range s.conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.shutdown(time.Second)
		}()
	}
	wg.Wait()
	close(s.torn)
}

func (s *Session) waitTorn() {
	select {
	case <-s.torn:
	case <-time.After(3 * time.Second):
	}
}

// endErr is what a call on an ended session returns.
func (s *Session) endErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.err != nil:
		return s.err
	case s.closedBy != "":
		return fmt.Errorf("%w by %s", ErrClosed, s.closedBy)
	}
	return ErrClosed
}

// Abort ends the run on every rank: each one's Err becomes an *AbortError
// naming this rank and reason. It returns once the news is sent (at most a
// few seconds). Aborting an ended session does nothing.
func (s *Session) Abort(reason string) {
	s.fail(reason, -1)
	s.waitTorn()
}

// Close ends the session cleanly: the others see a goodbye, not a lost
// rank. Pending and later calls fail with ErrClosed.
func (s *Session) Close() error {
	s.end(nil, &frame{Type: tBye}, -1)
	s.waitTorn()
	return nil
}

// Cause turns an error from the data plane into the run's root failure. A
// dead rank usually shows on both planes at once, and a rank that stops
// because of it makes its own peers fail next, so the first data-plane error
// a rank sees may name the wrong rank. Cause returns the session's failure
// if there is one or one arrives within wait; otherwise it aborts the
// session with err (so every rank learns of it) and returns err. A nil err
// stays nil.
func (s *Session) Cause(err error, wait time.Duration) error {
	if err == nil {
		return nil
	}
	select {
	case <-s.done:
	case <-time.After(wait):
	}
	if serr := s.Err(); serr != nil {
		return serr
	}
	s.Abort(err.Error())
	return err
}
