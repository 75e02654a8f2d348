package remote

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/wire"
)

// ClientConfig says how to reach a server.
type ClientConfig struct {
	// Addr is host:port of the server.
	Addr string
	// Transport is "grpc" (default) or "tcp" (the raw-TCP twin).
	Transport string
	Token     string
	// TLSCA (PEM) turns on TLS (both transports) and verifies the server with it;
	// ServerName overrides the name checked.
	TLSCA, ServerName string
	// MaxMessageBytes caps one message each way (default 4 MiB).
	MaxMessageBytes int
	// CallTimeout applies to every call whose context has no deadline
	// (default 60 s); on raw TCP such a call may run up to CallTimeout/16
	// (at most a second) longer before it is cut.
	CallTimeout time.Duration
	// Poll is how the raw-TCP connection's reads wait for a reply
	// (wire.PollEnv's values; empty: that variable, else auto); gRPC
	// does not read it.
	Poll string
}

// Client is one connection to a server, on either transport.
type Client struct {
	cfg ClientConfig
	t   transport
	// Socket counts every byte through the client's socket (for gRPC:
	// HTTP/2 and TLS framing too).
	socketIn, socketOut atomic.Int64
}

type transport interface {
	open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error)
	close(ctx context.Context, id string) error
	step(ctx context.Context) (clientStream, error)
	shutdown() error
}

type clientStream interface {
	Send(*pb.Frame) error
	CloseSend() error
	Recv() (*pb.Frame, error)
	// sendData sends one data chunk without copying it, recvData receives
	// one into dst; both return the framed size.
	sendData(d []byte) (int64, error)
	recvData(dst []byte) (int, int64, error)
	finish()
	wire(f *pb.Frame) int64 // framed size of one message
}

// Dial connects to a server.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = 4 << 20
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 60 * time.Second
	}
	c := &Client{cfg: cfg}
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	var err error
	switch cfg.Transport {
	case "", "grpc":
		c.t, err = dialGRPC(c)
	case "tcp":
		c.t, err = dialTCP(ctx, c)
	default:
		return nil, fmt.Errorf("client: transport %q: must be grpc or tcp", cfg.Transport)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.cfg.CallTimeout)
}

// SocketBytes is what crossed the client's socket each way so far.
func (c *Client) SocketBytes() (in, out int64) { return c.socketIn.Load(), c.socketOut.Load() }

// PollPolicy says how the raw-TCP connection's reads wait for a reply (""
// on gRPC).
func (c *Client) PollPolicy() string {
	if t, ok := c.t.(*tcpTransport); ok {
		return t.poll.String()
	}
	return ""
}

// Close hangs up; the server frees this connection's sessions.
func (c *Client) Close() error { return c.t.shutdown() }

// Session is one server session.
type Session struct {
	c            *Client
	ID           string
	Mode         partition.RemoteMode
	Bytes        int64 // server memory reserved
	maxChunk     int
	Plan         *partition.Plan
	Logits       bool
	OpenTransfer commcount.TransferSnapshot // weights load (kv mode)
	ss           *sessionStream             // gRPC: the session's stream of steps; nil on raw TCP
}

// Open opens a session for cfg in mode; a kv-mode session then needs Load.
func (c *Client) Open(ctx context.Context, cfg *configs.Config, mode partition.RemoteMode, opts partition.RemoteOptions) (*Session, error) {
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("open: encode config %s: %w", cfg.Name, err)
	}
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	r, err := c.t.open(ctx, &pb.OpenRequest{ConfigJson: js, ConfigHash: cfg.Hash(), Mode: wire.PBMode(mode), Logits: opts.Logits})
	if err != nil {
		return nil, c.named(ctx, err)
	}
	chunk := int(r.MaxChunkBytes)
	if own := wire.ChunkBytes(c.cfg.MaxMessageBytes); own < chunk || chunk <= 0 {
		chunk = own
	}
	s := &Session{c: c, ID: r.SessionId, Mode: mode, Bytes: r.SessionBytes, maxChunk: chunk, Plan: plan, Logits: opts.Logits}
	if _, ok := c.t.(*grpcTransport); ok {
		s.ss = &sessionStream{}
	}
	return s, nil
}

func (c *Client) named(ctx context.Context, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		// On raw TCP a call its context ended fails as the connection's
		// read or write does (its deadline set in the past): say so, and
		// let errors.Is find the context's error, as gRPC's status does.
		if ce := ctx.Err(); ce != nil && !errors.Is(err, ce) {
			return fmt.Errorf("server %s: %w: %w", c.cfg.Addr, ce, err)
		}
		return fmt.Errorf("server %s: %w", c.cfg.Addr, err)
	}
	return status.Errorf(st.Code(), "server %s: %s", c.cfg.Addr, st.Message())
}

// Close ends the session on the server. On gRPC it first closes the
// session's stream, at once: a step running on it fails, saying the
// session was closed under it (on raw TCP, Close waits for a step in
// flight: the connection carries one call at a time).
func (s *Session) Close(ctx context.Context) error {
	ctx, cancel := s.c.deadline(ctx)
	defer cancel()
	if s.ss != nil {
		s.ss.end()
	}
	if err := s.c.t.close(ctx, s.ID); err != nil {
		return s.c.named(ctx, err)
	}
	return nil
}

// StepResult is one request's reply, the server's timings and the bytes the
// client's transport counted.
type StepResult struct {
	Tensors   []wire.Tensor
	QueueWait time.Duration
	Receive   time.Duration // server: receiving the request's data
	Execute   time.Duration
	Send      time.Duration // server: sending the reply
	// Import and Serialize are the engine's: installing the request's state
	// on the device, and reading the reply's back and encoding it. Span is
	// the server's whole request; Util the device's utilization over it.
	Import, Serialize, Span time.Duration
	Util                    wire.Utilization
	Wall                    time.Duration // the client's call, end to end
	Bytes                   commcount.TransferSnapshot
}

// stream is where a step goes: on gRPC the session's stream when the
// server has the Session RPC, else (and on raw TCP) a Step call.
func (s *Session) stream(ctx context.Context) (clientStream, error) {
	if g, ok := s.c.t.(*grpcTransport); ok && s.ss != nil {
		if st, err := g.begin(ctx, s.ss); st != nil || err != nil {
			return st, err
		}
	}
	return s.c.t.step(ctx)
}

// Step sends one request and reads its reply. The tensors' data is sent
// without a copy: it must not change until Step returns. A step that
// Session.Close cut off says so (its error wraps what the transport saw).
func (s *Session) Step(ctx context.Context, phase partition.Phase, step int, in []wire.Tensor) (*StepResult, error) {
	open := s.ss == nil || !s.ss.isClosed()
	r, err := s.step(ctx, phase, step, in)
	if err != nil && open && s.ss != nil && s.ss.isClosed() {
		return nil, fmt.Errorf("session %.8s…: closed by its client (Session.Close) while this step was in flight: %w", s.ID, err)
	}
	return r, err
}

func (s *Session) step(ctx context.Context, phase partition.Phase, step int, in []wire.Tensor) (*StepResult, error) {
	t0 := time.Now()
	var tr commcount.Transfer
	st, err := s.stream(ctx)
	if err != nil {
		return nil, s.c.named(ctx, err)
	}
	defer st.finish()
	h := &pb.StepHeader{SessionId: s.ID, Step: int32(step)}
	switch phase {
	case partition.Prefill:
		h.Phase = pb.Phase_PHASE_PREFILL
	case partition.Decode:
		h.Phase = pb.Phase_PHASE_DECODE
	case wire.PhaseLoad:
		h.Phase = pb.Phase_PHASE_LOAD
	case wire.PhasePause:
		h.Phase = pb.Phase_PHASE_PAUSE
	case wire.PhaseResume:
		h.Phase = pb.Phase_PHASE_RESUME
	default:
		return nil, fmt.Errorf("step: phase %q: must be prefill, decode, load, pause or resume", phase)
	}
	for _, t := range in {
		if int64(len(t.Data)) != t.Bytes() {
			return nil, fmt.Errorf("step: tensor %q holds %d B, its shape %v × %d B says %d", t.Name, len(t.Data), t.Shape, t.ElemBytes, t.Bytes())
		}
		h.Tensors = append(h.Tensors, &pb.TensorInfo{Name: t.Name, ElemBytes: int32(t.ElemBytes), Shape: t.Shape, Bytes: int64(len(t.Data))})
	}
	send := func(f *pb.Frame) error {
		err := st.Send(f)
		tr.Up(int64(len(f.GetData())), st.wire(f))
		return err
	}
	err = send(&pb.Frame{Kind: &pb.Frame_Header{Header: h}})
	for _, t := range in {
		for off := 0; err == nil && off < len(t.Data); off += s.maxChunk {
			d := t.Data[off:min(off+s.maxChunk, len(t.Data))]
			var wire int64
			if wire, err = st.sendData(d); err == nil {
				tr.Up(int64(len(d)), wire)
			}
		}
	}
	if err == nil {
		err = st.CloseSend()
	}
	// A send error may hide the server's status: the reply says why.
	recv := func() (*pb.Frame, error) {
		f, rerr := st.Recv()
		if rerr != nil {
			return nil, s.c.named(ctx, rerr)
		}
		tr.Down(int64(len(f.GetData())), st.wire(f))
		return f, nil
	}
	f, rerr := recv()
	if rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, s.c.named(ctx, err)
	}
	rh := f.GetHeader()
	if rh == nil {
		return nil, fmt.Errorf("server %s: step: reply did not start with a header", s.c.cfg.Addr)
	}
	res := &StepResult{}
	for _, ti := range rh.Tensors {
		if err := wire.CheckTensor(ti.Name, int(ti.ElemBytes), ti.Shape, ti.Bytes); err != nil {
			return nil, fmt.Errorf("server %s: step reply: %w", s.c.cfg.Addr, err)
		}
		t := wire.Tensor{Name: ti.Name, ElemBytes: int(ti.ElemBytes), Shape: ti.Shape, Data: make([]byte, ti.Bytes)}
		for off := 0; off < len(t.Data); {
			n, wire, err := st.recvData(t.Data[off:])
			if err != nil {
				return nil, fmt.Errorf("server %s: step reply: tensor %q at byte %d of %d: %w", s.c.cfg.Addr, ti.Name, off, ti.Bytes, err)
			}
			tr.Down(int64(n), wire)
			off += n
		}
		res.Tensors = append(res.Tensors, t)
	}
	if f, err = recv(); err != nil {
		return nil, err
	}
	tl := f.GetTrailer()
	if tl == nil {
		return nil, fmt.Errorf("server %s: step reply: no trailer after the data", s.c.cfg.Addr)
	}
	res.QueueWait, res.Receive = time.Duration(tl.QueueWaitNs), time.Duration(tl.ReceiveNs)
	res.Execute, res.Send = time.Duration(tl.ExecuteNs), time.Duration(tl.SendNs)
	res.Import, res.Serialize, res.Span = time.Duration(tl.ImportNs), time.Duration(tl.SerializeNs), time.Duration(tl.SpanNs)
	res.Util = wire.Utilization{Fraction: tl.Utilization, Source: tl.UtilSource}
	res.Wall = time.Since(t0)
	res.Bytes = tr.Snapshot()
	return res, nil
}

// gRPC transport.

type grpcTransport struct {
	c   *Client
	cc  *grpc.ClientConn
	rc  pb.RemoteClient
	tok string
	// stepOnly: the server has no Session RPC (it answered Unimplemented).
	stepOnly atomic.Bool
}

type countingConn struct {
	net.Conn
	c *Client
}

func (cc countingConn) Read(b []byte) (int, error) {
	n, err := cc.Conn.Read(b)
	cc.c.socketIn.Add(int64(n))
	return n, err
}

func (cc countingConn) Write(b []byte) (int, error) {
	n, err := cc.Conn.Write(b)
	cc.c.socketOut.Add(int64(n))
	return n, err
}

func dialGRPC(c *Client) (transport, error) {
	cfg := c.cfg
	creds := insecure.NewCredentials()
	if cfg.TLSCA != "" {
		pool, err := wire.LoadPool(cfg.TLSCA)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: cfg.ServerName, MinVersion: tls.VersionTLS12})
	}
	var d net.Dialer
	cc, err := grpc.NewClient("passthrough:///"+cfg.Addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return countingConn{conn, c}, nil
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes), grpc.MaxCallSendMsgSize(cfg.MaxMessageBytes)),
		grpc.WithInitialWindowSize(wire.WindowBytes), grpc.WithInitialConnWindowSize(wire.WindowBytes),
		grpc.WithReadBufferSize(wire.IOBufferBytes), grpc.WithWriteBufferSize(wire.IOBufferBytes),
	)
	if err != nil {
		return nil, fmt.Errorf("client: server %s: %w", cfg.Addr, err)
	}
	return &grpcTransport{c: c, cc: cc, rc: pb.NewRemoteClient(cc), tok: cfg.Token}, nil
}

func (g *grpcTransport) ctx(ctx context.Context) context.Context {
	if g.tok == "" {
		return ctx
	}
	return wire.MetadataWithToken(ctx, g.tok)
}

func (g *grpcTransport) open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	return g.rc.Open(g.ctx(ctx), req, grpc.WaitForReady(false))
}

func (g *grpcTransport) close(ctx context.Context, id string) error {
	_, err := g.rc.Close(g.ctx(ctx), &pb.CloseRequest{SessionId: id})
	return err
}

type grpcClientStream struct {
	pb.Remote_StepClient
	cancel context.CancelFunc
}

func (s grpcClientStream) sendData(d []byte) (int64, error) {
	return int64(wire.DataHeaderLen(len(d)) + len(d) + wire.GRPCPrefixBytes), s.SendMsg(&wire.DataOut{Data: d})
}

func (s grpcClientStream) Recv() (*pb.Frame, error) {
	f, err := s.Remote_StepClient.Recv()
	if err != nil {
		return nil, trailerStatus(s.Remote_StepClient, err)
	}
	return f, nil
}

// trailerStatus is the status a server meant for a stream it ended by
// cancelling it (wire.StatusTrailer: gRPC itself answers Canceled then),
// else err.
func trailerStatus(st grpc.ClientStream, err error) error {
	if c := status.Code(err); c != codes.Canceled && c != codes.DeadlineExceeded {
		return err
	}
	if meant := wire.StatusFromTrailer(st.Trailer()); meant != nil {
		return meant
	}
	return err
}

func (s grpcClientStream) recvData(dst []byte) (int, int64, error) {
	d := &wire.DataIn{Dst: dst}
	if err := s.RecvMsg(d); err != nil {
		return 0, 0, trailerStatus(s.Remote_StepClient, err)
	}
	return d.N, int64(d.Wire + wire.GRPCPrefixBytes), nil
}

func (s grpcClientStream) finish()                { s.cancel() }
func (s grpcClientStream) wire(f *pb.Frame) int64 { return int64(proto.Size(f) + wire.GRPCPrefixBytes) }

func (g *grpcTransport) step(ctx context.Context) (clientStream, error) {
	ctx, cancel := g.c.deadline(g.ctx(ctx))
	st, err := g.rc.Step(ctx, grpc.ForceCodecV2(wire.Frames))
	if err != nil {
		cancel()
		return nil, err
	}
	return grpcClientStream{st, cancel}, nil
}

func (g *grpcTransport) shutdown() error { return g.cc.Close() }

// Raw-TCP transport: one call at a time on one connection.

type tcpTransport struct {
	mu      sync.Mutex
	tc      *wire.TCPConn
	addr    string
	timeout time.Duration // the client's CallTimeout
	armed   time.Time     // the connection's deadline; zero: none
	poll    wire.Poll     // how its reads wait
}

func dialTCP(ctx context.Context, c *Client) (transport, error) {
	poll, err := wire.ResolvePoll("client: Poll", c.cfg.Poll)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("client: server %s: %w", c.cfg.Addr, err)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetNoDelay(true)
	}
	// Reads spin by the policy before they sleep (under TLS too).
	var nc net.Conn = countingConn{poll.Conn(conn), c}
	if c.cfg.TLSCA != "" {
		if nc, err = tcpClientTLS(ctx, nc, c.cfg); err != nil {
			conn.Close()
			return nil, err
		}
	}
	t := &tcpTransport{tc: wire.NewTCPConn(nc, c.cfg.MaxMessageBytes), addr: c.cfg.Addr, timeout: c.cfg.CallTimeout, poll: poll}
	stop := t.bind(ctx)
	defer stop()
	if _, err := t.tc.WriteEnvelope(&pb.Envelope{Kind: &pb.Envelope_Hello{Hello: &pb.Hello{Token: c.cfg.Token}}}); err == nil {
		err = t.tc.Flush()
	}
	e, _, err := t.tc.ReadEnvelope()
	if err == nil {
		err = wire.EnvelopeErr(e)
	}
	if err != nil {
		conn.Close()
		return nil, c.named(ctx, err)
	}
	return t, nil
}

// bind makes a call on the connection obey ctx: its cancellation and its
// deadline through context.AfterFunc (which runs when the context's own
// timer ends it), or, when ctx has no deadline, the client's CallTimeout
// armed on the connection. That deadline is moved only when it would end a
// call early (each call gets at least CallTimeout, at most 1/16 more, one
// second at most): setting a deadline is a timer operation, and a new
// earliest timer wakes a thread, which a decode step of a few bytes paid
// two or three times a call.
func (t *tcpTransport) bind(ctx context.Context) func() {
	if d, ok := ctx.Deadline(); ok {
		if !t.armed.IsZero() && t.armed.Before(d) {
			t.arm(time.Time{}) // would end this call before its own deadline
		}
	} else if now := time.Now(); t.armed.IsZero() || t.armed.Before(now.Add(t.timeout)) {
		t.arm(now.Add(t.timeout + wire.TimeoutSlack(t.timeout)))
	}
	if ctx.Done() == nil {
		return func() {}
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		t.tc.Conn().SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired // its deadline in the past is set before the clear
			t.arm(time.Time{})
		}
	}
}

// arm sets the connection's deadline, both ways (zero: none).
func (t *tcpTransport) arm(d time.Time) {
	t.armed = d
	t.tc.Conn().SetDeadline(d)
}

func (t *tcpTransport) call(ctx context.Context, e *pb.Envelope) (*pb.Envelope, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	stop := t.bind(ctx)
	defer stop()
	if _, err := t.tc.WriteEnvelope(e); err != nil {
		return nil, err
	}
	if err := t.tc.Flush(); err != nil {
		return nil, err
	}
	r, _, err := t.tc.ReadEnvelope()
	if err != nil {
		return nil, err
	}
	return r, wire.EnvelopeErr(r)
}

func (t *tcpTransport) open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	r, err := t.call(ctx, &pb.Envelope{Kind: &pb.Envelope_Open{Open: req}})
	if err != nil {
		return nil, err
	}
	if r.GetOpened() == nil {
		return nil, fmt.Errorf("open: unexpected reply %T", r.Kind)
	}
	return r.GetOpened(), nil
}

func (t *tcpTransport) close(ctx context.Context, id string) error {
	_, err := t.call(ctx, &pb.Envelope{Kind: &pb.Envelope_Close{Close: &pb.CloseRequest{SessionId: id}}})
	return err
}

type tcpClientStream struct {
	t    *tcpTransport
	stop func()
	// last is the frame last sent or received, n its framed size (as the
	// framing counted it: wire need not size it again).
	last *pb.Frame
	n    int64
	// env and kind wrap each frame sent (written before Send returns).
	env  pb.Envelope
	kind pb.Envelope_Frame
}

func (s *tcpClientStream) Send(f *pb.Frame) error {
	s.kind.Frame = f
	s.env.Kind = &s.kind
	n, err := s.t.tc.WriteEnvelope(&s.env)
	s.last, s.n = f, n
	return err
}

func (s *tcpClientStream) CloseSend() error { return s.t.tc.Flush() }

func (s *tcpClientStream) Recv() (*pb.Frame, error) {
	e, n, err := s.t.tc.ReadEnvelope()
	if err != nil {
		return nil, err
	}
	s.last, s.n = e.GetFrame(), n
	if err := wire.EnvelopeErr(e); err != nil {
		return nil, err
	}
	if e.GetFrame() == nil {
		return nil, fmt.Errorf("step: unexpected reply %T", e.Kind)
	}
	return e.GetFrame(), nil
}

func (s *tcpClientStream) sendData(d []byte) (int64, error) { return s.t.tc.WriteData(d) }

func (s *tcpClientStream) recvData(dst []byte) (int, int64, error) { return s.t.tc.ReadData(dst) }

func (s *tcpClientStream) finish() {
	s.stop()
	s.t.mu.Unlock()
}

func (s *tcpClientStream) wire(f *pb.Frame) int64 {
	if f == s.last && s.n > 0 {
		return s.n
	}
	return int64(proto.Size(&pb.Envelope{Kind: &pb.Envelope_Frame{Frame: f}}) + wire.TCPPrefixBytes)
}

func (t *tcpTransport) step(ctx context.Context) (clientStream, error) {
	t.mu.Lock()
	return &tcpClientStream{t: t, stop: t.bind(ctx)}, nil
}

func (t *tcpTransport) shutdown() error { return t.tc.Conn().Close() }

// tcpClientTLS runs the client's TLS handshake over nc, verifying the
// server with cfg.TLSCA: the raw-TCP twin over TLS, so the hello's token
// never crosses in clear. The name checked is cfg.ServerName, else the
// host of cfg.Addr.
func tcpClientTLS(ctx context.Context, nc net.Conn, cfg ClientConfig) (net.Conn, error) {
	pool, err := wire.LoadPool(cfg.TLSCA)
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
