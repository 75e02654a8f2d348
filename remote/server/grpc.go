package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"

	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/wire"
)

type grpcServer struct {
	pb.UnimplementedRemoteServer
	s      *Server
	pre    *preAuthListener
	gs     *grpc.Server
	health *health.Server
	conns  atomic.Int64
}

type connKey struct{}

// grpcConn is a connection's identity and its pre-auth state.
type grpcConn struct {
	owner string
	pre   *preAuthConn // nil: not from the pre-auth listener
	// sessionStreams counts the connection's open Session streams.
	sessionStreams atomic.Int64
}

// TagConn numbers each connection; sessions opened on it belong to it.
func (g *grpcServer) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	gc := &grpcConn{owner: fmt.Sprintf("grpc/%d", g.conns.Add(1))}
	if g.pre != nil && info.RemoteAddr != nil {
		gc.pre = g.pre.take(info.RemoteAddr.String())
	}
	return context.WithValue(ctx, connKey{}, gc)
}

// HandleConn frees a connection's sessions when it ends.
func (g *grpcServer) HandleConn(ctx context.Context, st stats.ConnStats) {
	if _, ok := st.(*stats.ConnEnd); ok {
		if gc, ok := ctx.Value(connKey{}).(*grpcConn); ok {
			g.s.dropOwner(gc.owner)
		}
	}
}

func (g *grpcServer) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (g *grpcServer) HandleRPC(context.Context, stats.RPCStats)                       {}

func owner(ctx context.Context) string {
	if gc, ok := ctx.Value(connKey{}).(*grpcConn); ok {
		return gc.owner
	}
	return ""
}

// authorizeMD checks a call's bearer token (health checks are open, as load
// balancers expect).
func (g *grpcServer) authorizeMD(method string, md metadata.MD) error {
	if strings.HasPrefix(method, "/grpc.health.v1.Health/") {
		return nil
	}
	var tok string
	if v := md.Get("authorization"); len(v) == 1 {
		tok, _ = strings.CutPrefix(v[0], "Bearer ")
	}
	return g.s.authorize(tok)
}

// tap is the one authorization point of the gRPC server: it runs on a new
// stream's headers, before any of its messages is read, so an
// unauthenticated call costs no message buffer. A call with the token marks
// its connection authenticated (it leaves the pre-auth bound and deadline).
func (g *grpcServer) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if err := g.authorizeMD(info.FullMethodName, info.Header); err != nil {
		return ctx, err
	}
	if gc, ok := ctx.Value(connKey{}).(*grpcConn); ok && gc.pre != nil && !strings.HasPrefix(info.FullMethodName, "/grpc.health.v1.Health/") {
		if !gc.pre.authenticated(g.s) {
			return ctx, status.Errorf(codes.ResourceExhausted, "the server's memory budget of %d B has no room for another connection's %d B of buffers; retry later",
				g.s.cfg.MemoryBudgetBytes, grpcConnBytes)
		}
	}
	if info.FullMethodName == pb.Remote_Step_FullMethodName || info.FullMethodName == pb.Remote_Session_FullMethodName {
		return withStreamCancel(ctx), nil
	}
	return ctx, nil
}

type streamCancelKey struct{}

// withStreamCancel makes ctx, which becomes the stream's own context (the
// one gRPC's receives and sends wait on), cancellable by the server: the
// read watch ends a receive past ReadTimeout, and a session stream waiting
// for its next step ends when its session is freed or the server drains,
// without running each receive in a goroutine of its own.
func withStreamCancel(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	return context.WithValue(ctx, streamCancelKey{}, cancel)
}

// streamCancel is the cancel of a stream's context made by the tap (nil
// for a stream the tap did not see).
func streamCancel(ctx context.Context) context.CancelCauseFunc {
	c, _ := ctx.Value(streamCancelKey{}).(context.CancelCauseFunc)
	return c
}

// check checks the token again (in case a call reaches a handler without
// the tap) and sets the server-side deadline. A Session stream gets none:
// it lives as long as its session, and each of its steps runs under
// CallTimeout (serveSession).
func (g *grpcServer) check(ctx context.Context, method string) (context.Context, context.CancelFunc, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if err := g.authorizeMD(method, md); err != nil {
		return nil, nil, err
	}
	if method == pb.Remote_Session_FullMethodName {
		return ctx, func() {}, nil
	}
	if d, ok := ctx.Deadline(); ok && !d.After(time.Now().Add(g.s.cfg.CallTimeout)) {
		// The client's deadline (grpc-timeout) comes first: no second timer.
		return ctx, func() {}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.s.cfg.CallTimeout)
	return ctx, cancel, nil
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w wrappedStream) Context() context.Context { return w.ctx }

// ListenGRPC serves the gRPC transport on addr ("127.0.0.1:0" picks a port)
// and returns the address it listens on.
func (s *Server) ListenGRPC(addr string) (net.Addr, error) {
	if s.grpc != nil {
		return nil, fmt.Errorf("listen %s: the gRPC transport is already serving", addr)
	}
	if err := s.checkListen(addr); err != nil {
		return nil, err
	}
	g := &grpcServer{s: s, health: health.NewServer()}
	opts := []grpc.ServerOption{
		grpc.StatsHandler(g),
		grpc.InTapHandle(g.tap),
		grpc.ConnectionTimeout(s.cfg.HandshakeTimeout),
		grpc.ForceServerCodecV2(wire.Frames),
		grpc.InitialWindowSize(wire.WindowBytes), grpc.InitialConnWindowSize(wire.WindowBytes),
		grpc.ReadBufferSize(wire.IOBufferBytes), grpc.WriteBufferSize(wire.IOBufferBytes),
		grpc.MaxRecvMsgSize(s.cfg.MaxMessageBytes),
		// Streams per connection: as many as may execute and wait, and the
		// open session streams; more wait on the client (HTTP/2
		// SETTINGS_MAX_CONCURRENT_STREAMS).
		grpc.MaxConcurrentStreams(uint32(s.cfg.MaxConcurrent + s.cfg.MaxQueue + s.cfg.MaxSessionStreams)),
		grpc.MaxSendMsgSize(s.cfg.MaxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: wire.KeepaliveTime, Timeout: wire.KeepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ctx, cancel, err := g.check(ctx, info.FullMethod)
			if err != nil {
				return nil, err
			}
			defer cancel()
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ctx, cancel, err := g.check(ss.Context(), info.FullMethod)
			if err != nil {
				return err
			}
			defer cancel()
			return h(srv, wrappedStream{ss, ctx})
		}),
	}
	if s.cfg.TLSCert != "" || s.cfg.TLSKey != "" {
		tc, err := serverTLS(s.cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	} else if s.cfg.ClientCA != "" {
		return nil, fmt.Errorf("server: a client CA (%s) needs --tls-cert and --tls-key", s.cfg.ClientCA)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	g.pre = newPreAuthListener(ln, s.cfg.MaxUnauthenticated, s.cfg.HandshakeTimeout)
	g.gs = grpc.NewServer(opts...)
	if s.cfg.StepOnly {
		pb.RegisterRemoteServer(g.gs, stepOnly{g: g})
	} else {
		pb.RegisterRemoteServer(g.gs, g)
	}
	healthpb.RegisterHealthServer(g.gs, g.health)
	g.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	g.health.SetServingStatus(pb.Remote_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	s.grpc = g
	go g.gs.Serve(g.pre)
	return ln.Addr(), nil
}

func serverTLS(cfg ServerConfig) (*tls.Config, error) {
	certPEM, keyPEM := cfg.certPEM, cfg.keyPEM
	if certPEM == nil {
		var err error
		if certPEM, err = wire.ReadSmallFile("--tls-cert", cfg.TLSCert, wire.MaxPEMFileBytes); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		if keyPEM, err = wire.ReadSmallFile("--tls-key", cfg.TLSKey, wire.MaxPEMFileBytes); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("server: --tls-cert %s / --tls-key %s: %w", cfg.TLSCert, cfg.TLSKey, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if cfg.ClientCA != "" {
		pool, err := wire.LoadPool(cfg.ClientCA)
		if err != nil {
			return nil, err
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// drain is GracefulStop bounded by ctx; it reports whether it had to force.
func (g *grpcServer) drain(ctx context.Context) bool {
	g.health.Shutdown()
	done := make(chan struct{})
	go func() { g.gs.GracefulStop(); close(done) }()
	select {
	case <-done:
		return false
	case <-ctx.Done():
		g.gs.Stop() // closes every connection; a handler inside an engine step is not waited for
		select {
		case <-done:
		case <-time.After(forcedStopWait):
		}
		return true
	}
}

func (g *grpcServer) Open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	return g.s.open(owner(ctx), req)
}

func (g *grpcServer) Close(ctx context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	if err := g.s.closeSession(owner(ctx), req.SessionId); err != nil {
		return nil, err
	}
	return &pb.CloseResponse{}, nil
}

// grpcServerStream counts what crosses a server Step or Session stream.
type grpcServerStream struct {
	st pb.Remote_StepServer
	s  *Server
	// stop ends the stream from outside its handler (the read watch, a
	// session stream's idle watch): it cancels the stream's context, which
	// ends a receive waiting on it; gRPC then answers Canceled at once, so
	// the status meant (why) goes first into the trailer
	// wire.StatusTrailer, which the client reads. nil: the tap did not see
	// the stream.
	stop func(why error)
}

func newGRPCServerStream(st pb.Remote_StepServer, s *Server) grpcServerStream {
	c := grpcServerStream{st: st, s: s}
	if cancel := streamCancel(st.Context()); cancel != nil {
		c.stop = func(why error) {
			st.SetTrailer(wire.StatusTrailerMD(why))
			cancel(why)
		}
	}
	return c
}

func (c grpcServerStream) Send(f *pb.Frame) error {
	c.s.Bytes.Down(int64(len(f.GetData())), int64(proto.Size(f)+wire.GRPCPrefixBytes))
	return c.st.Send(f)
}

// within runs a receive, giving up after the server's read timeout: gRPC's
// RecvMsg watches only the stream's own context, so a client that stops
// sending mid-request would otherwise hold the request until CallTimeout.
// The read watch cancels that context; the caller returns, which ends the
// stream (serveStep keeps no buffer of a failed request).
func (c grpcServerStream) within(recv func() error) error { return c.s.reads.within(c.stop, recv) }

func (c grpcServerStream) Recv() (*pb.Frame, error) {
	var f *pb.Frame
	err := c.within(func() (err error) { f, err = c.st.Recv(); return err })
	if err != nil {
		return nil, err
	}
	c.s.Bytes.Up(int64(len(f.GetData())), int64(proto.Size(f)+wire.GRPCPrefixBytes))
	return f, nil
}

func (c grpcServerStream) RecvData(dst []byte) (int, error) {
	d := &wire.DataIn{Dst: dst}
	if err := c.within(func() error { return c.st.RecvMsg(d) }); err != nil {
		return 0, err
	}
	c.s.Bytes.Up(int64(d.N), int64(d.Wire+wire.GRPCPrefixBytes))
	return d.N, nil
}

func (c grpcServerStream) SendData(d []byte) error {
	c.s.Bytes.Down(int64(len(d)), int64(wire.DataHeaderLen(len(d))+len(d)+wire.GRPCPrefixBytes))
	return c.st.SendMsg(&wire.DataOut{Data: d})
}

func (g *grpcServer) Step(st pb.Remote_StepServer) error {
	err := g.s.serveStep(st.Context(), owner(st.Context()), newGRPCServerStream(st, g.s))
	if _, ok := status.FromError(err); !ok {
		return status.Errorf(codes.Unavailable, "step: %v", err)
	}
	return err
}

// preAuthListener bounds the gRPC connections that have not yet made a
// call with the token: at most max at once (one more is closed on accept,
// before a byte is read), each closed if it has not authenticated within
// timeout. An unauthenticated connection holds gRPC's transport buffers and
// no message: the tap refuses its calls from their headers.
type preAuthListener struct {
	net.Listener
	slots   chan struct{}
	timeout time.Duration
	mu      sync.Mutex
	byAddr  map[string]*preAuthConn // accepted, not yet tagged by TagConn
}

func newPreAuthListener(ln net.Listener, max int, timeout time.Duration) *preAuthListener {
	return &preAuthListener{Listener: ln, slots: make(chan struct{}, max), timeout: timeout, byAddr: map[string]*preAuthConn{}}
}

type preAuthConn struct {
	net.Conn
	l      *preAuthListener
	addr   string
	once   sync.Once
	authed atomic.Bool
	timer  *time.Timer
	mu     sync.Mutex
	server *Server // set once authenticated: its buffers are reserved there
}

func (l *preAuthListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
		default:
			c.Close() // too many unauthenticated connections
			continue
		}
		pc := &preAuthConn{Conn: c, l: l, addr: c.RemoteAddr().String()}
		l.mu.Lock()
		l.byAddr[pc.addr] = pc
		l.mu.Unlock()
		pc.timer = time.AfterFunc(l.timeout, func() {
			if !pc.authed.Load() {
				pc.Close()
			}
		})
		return pc, nil
	}
}

// take hands TagConn the connection from addr.
func (l *preAuthListener) take(addr string) *preAuthConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	pc := l.byAddr[addr]
	delete(l.byAddr, addr)
	return pc
}

// grpcConnBytes is what an authenticated gRPC connection holds and counts
// against the memory budget: its read and write buffers. (Its HTTP/2 flow
// control window lets a client have up to wire.WindowBytes in flight, which the
// server reads into a request's counted buffers as it arrives.)
const grpcConnBytes = 2 * wire.IOBufferBytes

// authenticated counts the connection's buffers against s's budget, then
// frees its pre-auth slot and stops its deadline; false when the budget has
// no room (the connection stays unauthenticated). Only the tap calls it,
// and gRPC runs the tap of one connection's streams one at a time.
func (pc *preAuthConn) authenticated(s *Server) bool {
	if pc.authed.Load() {
		return true
	}
	if !s.reserveConn(grpcConnBytes) {
		return false
	}
	pc.mu.Lock()
	pc.server = s
	pc.mu.Unlock()
	pc.authed.Store(true)
	pc.timer.Stop()
	pc.release()
	return true
}

func (pc *preAuthConn) release() {
	pc.once.Do(func() {
		<-pc.l.slots
		pc.l.mu.Lock()
		if pc.l.byAddr[pc.addr] == pc {
			delete(pc.l.byAddr, pc.addr)
		}
		pc.l.mu.Unlock()
	})
}

func (pc *preAuthConn) Close() error {
	pc.release()
	pc.mu.Lock()
	if pc.server != nil {
		pc.server.releaseConn(grpcConnBytes)
		pc.server = nil
	}
	pc.mu.Unlock()
	return pc.Conn.Close()
}
