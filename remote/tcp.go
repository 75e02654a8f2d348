package remote

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/partbench/partbench/remote/remotepb"
)

// The raw-TCP twin carries the same messages as the gRPC transport, each an
// Envelope preceded by its length (4 bytes, big-endian), one call at a time
// per connection. A connection starts with a Hello carrying the token.
const tcpPrefixBytes = 4

// tcpConn reads and writes framed Envelopes and counts their bytes.
type tcpConn struct {
	c   net.Conn
	r   *bufio.Reader
	w   *bufio.Writer
	max int
	buf []byte
	// hold, when set, counts a message larger than tcpKeptMessageBytes
	// against the server's budget while it is read and decoded (release
	// gives it back); data chunks are read straight into counted buffers.
	hold    func(n int64) error
	release func(n int64)
}

// tcpIOBytes is each direction's buffer of an authenticated connection;
// tcpPreAuthIOBytes is an unauthenticated one's.
const (
	tcpIOBytes        = 256 << 10
	tcpPreAuthIOBytes = 4 << 10
	// tcpConnBytes is what an authenticated connection holds and counts
	// against the memory budget: both buffers (a message larger than
	// tcpKeptMessageBytes is read into a buffer that is not kept).
	tcpConnBytes        = 2 * tcpIOBytes
	tcpKeptMessageBytes = 64 << 10
)

func newTCPConn(c net.Conn, maxMessage int) *tcpConn {
	return &tcpConn{c: c, r: bufio.NewReaderSize(c, tcpIOBytes), w: bufio.NewWriterSize(c, tcpIOBytes), max: maxMessage}
}

// authenticated gives a connection that presented its token the full
// message limit and buffers (a hello cannot be followed by anything before
// its reply, so nothing is buffered in the small ones).
func (t *tcpConn) authenticated(maxMessage int) {
	t.r = bufio.NewReaderSize(t.r, tcpIOBytes)
	t.w = bufio.NewWriterSize(t.c, tcpIOBytes)
	t.max = maxMessage
	t.buf = nil
}

// write frames one envelope; flush sends what is buffered.
func (t *tcpConn) write(e *pb.Envelope) (int64, error) {
	n := proto.Size(e)
	var err error
	t.buf, err = proto.MarshalOptions{}.MarshalAppend(binary.BigEndian.AppendUint32(t.buf[:0], uint32(n)), e)
	if err != nil {
		return 0, err
	}
	_, err = t.w.Write(t.buf)
	if cap(t.buf) > tcpKeptMessageBytes {
		t.buf = nil
	}
	if err != nil {
		return 0, err
	}
	return int64(n + tcpPrefixBytes), nil
}

func (t *tcpConn) flush() error { return t.w.Flush() }

// read reads one envelope, refusing one longer than the limit before
// reading its body.
func (t *tcpConn) read() (*pb.Envelope, int64, error) {
	n, err := t.readPrefix()
	if err != nil {
		return nil, 0, err
	}
	e, err := t.readBody(n)
	if err != nil {
		return nil, 0, err
	}
	return e, int64(n + tcpPrefixBytes), nil
}

// readPrefix reads a message's length and checks it against the limit.
func (t *tcpConn) readPrefix() (int, error) {
	var hdr [tcpPrefixBytes]byte
	if _, err := io.ReadFull(t.r, hdr[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > t.max {
		return 0, status.Errorf(codes.ResourceExhausted, "message of %d B is larger than the limit of %d B", n, t.max)
	}
	return n, nil
}

// readBody reads and decodes an envelope of n bytes.
func (t *tcpConn) readBody(n int) (*pb.Envelope, error) {
	if n > tcpKeptMessageBytes && t.hold != nil {
		if err := t.hold(int64(n)); err != nil {
			// Read past it through the small buffer (no allocation), so the
			// client, still writing it, gets the reply rather than a reset.
			if _, derr := t.r.Discard(n); derr != nil {
				return nil, derr
			}
			return nil, err
		}
		defer t.release(int64(n))
	}
	if cap(t.buf) < n {
		t.buf = make([]byte, n)
	}
	b := t.buf[:n]
	if _, err := io.ReadFull(t.r, b); err != nil {
		return nil, err
	}
	e := &pb.Envelope{}
	err := proto.Unmarshal(b, e)
	if cap(t.buf) > tcpKeptMessageBytes {
		t.buf = nil // a large message's buffer is not held between messages
	}
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "malformed message: %v", err)
	}
	return e, nil
}

func errEnvelope(err error) *pb.Envelope {
	st := status.Convert(err)
	return &pb.Envelope{Kind: &pb.Envelope_Error{Error: &pb.Error{Code: int32(st.Code()), Message: st.Message()}}}
}

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

// ListenTCP serves the raw-TCP twin on addr and returns its address.
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
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
	tc := &tcpConn{c: sc.c, r: bufio.NewReaderSize(sc.c, tcpPreAuthIOBytes), w: bufio.NewWriterSize(sc.c, tcpPreAuthIOBytes), max: PreAuthMessageBytes}
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
		_, err := tc.write(e)
		return err == nil && tc.flush() == nil
	}
	sc.c.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	hello, _, err := tc.read()
	if err != nil || hello.GetHello() == nil {
		reply(errEnvelope(status.Errorf(codes.Unauthenticated, "the first message must be a hello (within %v, at most %d B)", s.cfg.HandshakeTimeout, PreAuthMessageBytes)))
		return
	}
	if err := s.authorize(hello.GetHello().Token); err != nil {
		reply(errEnvelope(err))
		return
	}
	preAuth = false
	<-t.preAuth
	// The connection's buffers count against the memory budget.
	if !s.reserveConn(tcpConnBytes) {
		reply(errEnvelope(status.Errorf(codes.ResourceExhausted, "the server's memory budget of %d B has no room for another connection's %d B of buffers; retry later", s.cfg.MemoryBudgetBytes, tcpConnBytes)))
		return
	}
	defer s.releaseConn(tcpConnBytes)
	if !reply(&pb.Envelope{Kind: &pb.Envelope_Hello{Hello: &pb.Hello{}}}) {
		return
	}
	tc.authenticated(s.cfg.MaxMessageBytes)
	tc.hold = func(n int64) error {
		if !s.reserveConn(n) {
			return status.Errorf(codes.ResourceExhausted, "a message of %d B does not fit the server's memory budget of %d B now; retry later", n, s.cfg.MemoryBudgetBytes)
		}
		return nil
	}
	tc.release = s.releaseConn
	for {
		sc.c.SetDeadline(time.Time{})
		e, _, err := tc.read()
		sc.mu.Lock()
		sc.busy = true
		sc.mu.Unlock()
		if err != nil {
			if _, ok := status.FromError(err); ok && !errors.Is(err, io.EOF) {
				reply(errEnvelope(err))
			}
			return
		}
		sc.c.SetDeadline(time.Now().Add(s.cfg.CallTimeout))
		ok := true
		switch k := e.Kind.(type) {
		case *pb.Envelope_Open:
			r, err := s.open(owner, k.Open)
			if err != nil {
				ok = reply(errEnvelope(err))
			} else {
				ok = reply(&pb.Envelope{Kind: &pb.Envelope_Opened{Opened: r}})
			}
		case *pb.Envelope_Close:
			if err := s.closeSession(owner, k.Close.SessionId); err != nil {
				ok = reply(errEnvelope(err))
			} else {
				ok = reply(&pb.Envelope{Kind: &pb.Envelope_Closed{Closed: &pb.CloseResponse{}}})
			}
		case *pb.Envelope_Frame:
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
			st := &tcpServerStream{tc: tc, s: s, first: k.Frame}
			s.Bytes.Up(int64(len(k.Frame.GetData())), int64(proto.Size(e)+tcpPrefixBytes))
			err := s.serveStep(ctx, owner, st)
			cancel()
			if err != nil {
				// The stream's state is unknown after an error: report and hang up.
				reply(errEnvelope(err))
				return
			}
			ok = tc.flush() == nil
		case *pb.Envelope_Generate:
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
			ok = s.tcpGenerate(ctx, tc, k.Generate)
			cancel()
		default:
			ok = reply(errEnvelope(status.Errorf(codes.InvalidArgument, "unexpected message %T", e.Kind)))
		}
		sc.mu.Lock()
		sc.busy = false
		sc.mu.Unlock()
		if !ok || t.stop.Load() {
			return
		}
	}
}

type tcpServerStream struct {
	tc    *tcpConn
	s     *Server
	first *pb.Frame
}

// readDeadline gives the next message of a request ReadTimeout to arrive.
func (t *tcpServerStream) readDeadline() {
	t.tc.c.SetReadDeadline(time.Now().Add(t.s.cfg.ReadTimeout))
}

// timeout names the read deadline in an error it caused.
func (t *tcpServerStream) timeout(err error) error {
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
	e, n, err := t.tc.read()
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
	n, wire, err := t.tc.readData(dst)
	err = t.timeout(err)
	if err == nil {
		t.s.Bytes.Up(int64(n), wire)
	}
	return n, err
}

func (t *tcpServerStream) SendData(d []byte) error {
	wire, err := t.tc.writeData(d)
	if err == nil {
		t.s.Bytes.Down(int64(len(d)), wire)
	}
	return err
}

func (t *tcpServerStream) Send(f *pb.Frame) error {
	n, err := t.tc.write(&pb.Envelope{Kind: &pb.Envelope_Frame{Frame: f}})
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

// tcpClientTLS runs the client's TLS handshake over nc, verifying the
// server with cfg.TLSCA: the raw-TCP twin over TLS, so the hello's token
// never crosses in clear. The name checked is cfg.ServerName, else the
// host of cfg.Addr.
func tcpClientTLS(ctx context.Context, nc net.Conn, cfg ClientConfig) (net.Conn, error) {
	pool, err := loadPool(cfg.TLSCA)
	if err != nil {
		return nil, err
	}
	name := cfg.ServerName
	if name == "" {
		if name, _, err = net.SplitHostPort(cfg.Addr); err != nil {
			return nil, fmt.Errorf("client: server %q: %v", cfg.Addr, err)
		}
	}
	tlc := tls.Client(nc, &tls.Config{RootCAs: pool, ServerName: name, MinVersion: tls.VersionTLS12})
	if err := tlc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("client: server %s: TLS handshake (CA %s): %w", cfg.Addr, cfg.TLSCA, err)
	}
	return tlc, nil
}
