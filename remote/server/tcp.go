package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/wire"
)

type tcpServer struct {
	s       *Server
	ln      net.Listener
	preAuth chan struct{} // a slot per unauthenticated connection
	n       atomic.Int64
	mu      sync.Mutex
	conns   map[*tcpSrvConn]bool
	wg      sync.WaitGroup
	stop    atomic.Bool
}

type tcpSrvConn struct {
	c    net.Conn
	mu   sync.Mutex
	busy bool
}

// ListenTCP serves the raw-TCP twin on addr and returns its address; its
// connections' reads wait by ServerConfig.Poll (PollPolicy says how).
func (s *Server) ListenTCP(addr string) (net.Addr, error) {
	if err := s.checkListen(addr); err != nil {
		return nil, err
	}
	var tc *tls.Config
	if s.cfg.TLSCert != "" || s.cfg.TLSKey != "" {
		var err error
		if tc, err = serverTLS(s.cfg); err != nil {
			return nil, err
		}
	} else if s.cfg.ClientCA != "" {
		return nil, fmt.Errorf("server: a client CA (%s) needs --tls-cert and --tls-key", s.cfg.ClientCA)
	}
	poll, err := wire.ResolvePoll("server: Poll", s.cfg.Poll)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	// Reads of each connection spin by the policy before they sleep (under
	// TLS too: the TLS layer reads through them).
	s.poll = poll
	ln = poll.Listener(ln)
	if tc != nil {
		// The TLS handshake runs on the hello's first read, under the
		// handshake deadline.
		ln = tls.NewListener(ln, tc)
	}
	t := &tcpServer{s: s, ln: ln, conns: map[*tcpSrvConn]bool{}, preAuth: make(chan struct{}, s.cfg.MaxUnauthenticated)}
	s.tcp = append(s.tcp, t)
	go t.accept()
	return ln.Addr(), nil
}

// PollPolicy is how the raw-TCP connections' reads wait for the next
// request, as ListenTCP decided it (off before it).
func (s *Server) PollPolicy() wire.Poll { return s.poll }

func (t *tcpServer) accept() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		select {
		case t.preAuth <- struct{}{}:
		default:
			// Too many connections have not said hello yet: refuse this one
			// without reading from it.
			c.Close()
			continue
		}
		sc := &tcpSrvConn{c: c}
		t.mu.Lock()
		if t.stop.Load() {
			<-t.preAuth
			t.mu.Unlock()
			c.Close()
			continue
		}
		t.conns[sc] = true
		t.wg.Add(1)
		t.mu.Unlock()
		go t.serve(sc)
	}
}

// serve runs one connection's calls in order; the sessions it opened are
// freed when it ends.
func (t *tcpServer) serve(sc *tcpSrvConn) {
	s := t.s
	owner := fmt.Sprintf("tcp/%d", t.n.Add(1))
	// Until the hello has shown the token the connection holds a pre-auth
	// slot, small buffers and a small message limit, and must say hello
	// within the handshake timeout.
	tc := wire.NewPreAuthTCPConn(sc.c, wire.PreAuthMessageBytes)
	preAuth := true
	defer func() {
		if preAuth {
			<-t.preAuth
		}
		sc.c.Close()
		s.dropOwner(owner)
		t.mu.Lock()
		delete(t.conns, sc)
		t.mu.Unlock()
		t.wg.Done()
	}()
	reply := func(e *pb.Envelope) bool {
		_, err := tc.WriteEnvelope(e)
		return err == nil && tc.Flush() == nil
	}
	sc.c.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	hello, _, err := tc.ReadEnvelope()
	if err != nil || hello.GetHello() == nil {
		reply(wire.ErrEnvelope(status.Errorf(codes.Unauthenticated, "the first message must be a hello (within %v, at most %d B)", s.cfg.HandshakeTimeout, wire.PreAuthMessageBytes)))
		return
	}
	if err := s.authorize(hello.GetHello().Token); err != nil {
		reply(wire.ErrEnvelope(err))
		return
	}
	preAuth = false
	<-t.preAuth
	// The connection's buffers count against the memory budget.
	if !s.reserveConn(wire.TCPConnBytes) {
		reply(wire.ErrEnvelope(status.Errorf(codes.ResourceExhausted, "the server's memory budget of %d B has no room for another connection's %d B of buffers; retry later", s.cfg.MemoryBudgetBytes, wire.TCPConnBytes)))
		return
	}
	defer s.releaseConn(wire.TCPConnBytes)
	if !reply(&pb.Envelope{Kind: &pb.Envelope_Hello{Hello: &pb.Hello{}}}) {
		return
	}
	tc.Authenticated(s.cfg.MaxMessageBytes)
	tc.SetBudget(func(n int64) error {
		if !s.reserveConn(n) {
			return status.Errorf(codes.ResourceExhausted, "a message of %d B does not fit the server's memory budget of %d B now; retry later", n, s.cfg.MemoryBudgetBytes)
		}
		return nil
	}, s.releaseConn)
	clk := newCallClock(sc.c, s.cfg.CallTimeout)
	defer clk.stop()
	clk.arm(time.Time{}) // the handshake's deadline ends with the hello
	for {
		// Wait for the next call's first byte (no deadline but what the
		// last call left armed, cleared if it passes); the call's deadline
		// then covers the rest of it.
		var err error
		for {
			if _, err = tc.Reader().Peek(1); err == nil || !clk.idle(err) {
				break
			}
		}
		var e *pb.Envelope
		var n int64
		ctx, cancel := clk.start(time.Now())
		if err == nil {
			e, n, err = tc.ReadEnvelope()
		}
		sc.mu.Lock()
		sc.busy = true
		sc.mu.Unlock()
		if err != nil {
			cancel()
			if _, ok := status.FromError(err); ok && !errors.Is(err, io.EOF) {
				reply(wire.ErrEnvelope(err))
			}
			return
		}
		ok := true
		switch k := e.Kind.(type) {
		case *pb.Envelope_Open:
			r, err := s.open(owner, k.Open)
			if err != nil {
				ok = reply(wire.ErrEnvelope(err))
			} else {
				ok = reply(&pb.Envelope{Kind: &pb.Envelope_Opened{Opened: r}})
			}
		case *pb.Envelope_Close:
			if err := s.closeSession(owner, k.Close.SessionId); err != nil {
				ok = reply(wire.ErrEnvelope(err))
			} else {
				ok = reply(&pb.Envelope{Kind: &pb.Envelope_Closed{Closed: &pb.CloseResponse{}}})
			}
		case *pb.Envelope_Frame:
			st := &tcpServerStream{tc: tc, s: s, clk: clk, first: k.Frame}
			s.Bytes.Up(int64(len(k.Frame.GetData())), n)
			if err := s.serveStep(ctx, owner, st); err != nil {
				cancel()
				// The stream's state is unknown after an error: report and hang up.
				reply(wire.ErrEnvelope(err))
				return
			}
			ok = tc.Flush() == nil
		case *pb.Envelope_Generate:
			ok = s.tcpGenerate(ctx, tc, k.Generate)
			clk.movedRead() // its watch set and cleared the read deadline
		default:
			ok = reply(wire.ErrEnvelope(status.Errorf(codes.InvalidArgument, "unexpected message %T", e.Kind)))
		}
		cancel()
		sc.mu.Lock()
		sc.busy = false
		sc.mu.Unlock()
		if !ok || t.stop.Load() {
			return
		}
	}
}

type tcpServerStream struct {
	tc    *wire.TCPConn
	s     *Server
	clk   *callClock
	first *pb.Frame
	// env and kind wrap each frame sent (written before Send returns, so
	// one pair serves every frame of the step).
	env  pb.Envelope
	kind pb.Envelope_Frame
}

// readDeadline gives the next message of a request ReadTimeout to arrive,
// unless it has arrived already (reading it then takes no system call and
// cannot wait, so the deadline, a timer operation, would be spent for
// nothing).
func (t *tcpServerStream) readDeadline() {
	if t.tc.NextBuffered() {
		return
	}
	t.tc.Conn().SetReadDeadline(time.Now().Add(t.s.cfg.ReadTimeout))
	t.clk.movedRead()
}

// timeout names the read deadline in an error it caused.
func (t *tcpServerStream) timeout(err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return status.Errorf(codes.DeadlineExceeded, "no message within %v (the server's read timeout)", t.s.cfg.ReadTimeout)
	}
	return err
}

func (t *tcpServerStream) Recv() (*pb.Frame, error) {
	if f := t.first; f != nil {
		t.first = nil
		return f, nil
	}
	t.readDeadline()
	e, n, err := t.tc.ReadEnvelope()
	err = t.timeout(err)
	if err != nil {
		return nil, err
	}
	f := e.GetFrame()
	if f == nil {
		return nil, status.Errorf(codes.InvalidArgument, "step: expected a frame, got %T", e.Kind)
	}
	t.s.Bytes.Up(int64(len(f.GetData())), n)
	return f, nil
}

func (t *tcpServerStream) RecvData(dst []byte) (int, error) {
	t.readDeadline()
	n, wire, err := t.tc.ReadData(dst)
	err = t.timeout(err)
	if err == nil {
		t.s.Bytes.Up(int64(n), wire)
	}
	return n, err
}

func (t *tcpServerStream) SendData(d []byte) error {
	wire, err := t.tc.WriteData(d)
	if err == nil {
		t.s.Bytes.Down(int64(len(d)), wire)
	}
	return err
}

// flushReply sends the reply buffered so far (replyFlusher).
func (t *tcpServerStream) flushReply() error { return t.tc.Flush() }

var _ replyFlusher = (*tcpServerStream)(nil)

func (t *tcpServerStream) Send(f *pb.Frame) error {
	t.kind.Frame = f
	t.env.Kind = &t.kind
	n, err := t.tc.WriteEnvelope(&t.env)
	if err == nil {
		t.s.Bytes.Down(int64(len(f.GetData())), n)
	}
	return err
}

// drain stops accepting, closes idle connections, lets running calls end
// until ctx ends, then closes the rest; it reports whether it had to force.
func (t *tcpServer) drain(ctx context.Context) bool {
	t.stop.Store(true)
	t.ln.Close()
	t.mu.Lock()
	for sc := range t.conns {
		sc.mu.Lock()
		if !sc.busy {
			sc.c.Close()
		}
		sc.mu.Unlock()
	}
	t.mu.Unlock()
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
		return false
	case <-ctx.Done():
		t.mu.Lock()
		for sc := range t.conns {
			sc.c.Close()
		}
		t.mu.Unlock()
		select {
		case <-done:
		case <-time.After(forcedStopWait):
		}
		return true
	}
}
