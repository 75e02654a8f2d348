package server

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/wire"
)

// DefaultMaxSessionStreams is ServerConfig.MaxSessionStreams's default:
// how many Session streams one gRPC connection may hold open at once; one
// more is refused (ResourceExhausted, with the trailer
// wire.SessionStreamHeader: wire.SessionStreamLimited) before any of its
// frames is read, and its client steps that session over Step calls.
// HTTP/2's stream limit per connection is MaxConcurrent + MaxQueue +
// MaxSessionStreams, so open session streams, idle or not, never take a
// per-call step's room.
const DefaultMaxSessionStreams = 16

// MaxSessionStreamsLimit is the most ServerConfig.MaxSessionStreams (and
// `partbench serve --max-session-streams`) may be: 256, whose state
// (SessionStreamBytes each) is 8 MiB.
const MaxSessionStreamsLimit = 256

// SessionStreamBytes is what an open session stream counts against the
// memory budget while it is open: its handler and idle-watch goroutines
// and gRPC's stream, measured with client and server in one process at
// 22–23 KiB and 3 goroutines per open stream, both ends together, rounded
// up. A stream the budget has no room for is refused as the limit refuses
// one (its trailer: the client steps over Step calls, each of which the
// budget checks again).
const SessionStreamBytes = 32 << 10

// Session serves a session's steps in order on one stream (see the RPC's
// comment in remote.proto). Each step has every bound of a Step call: its
// header and data arrive under ReadTimeout, the step runs under
// CallTimeout (from its header's arrival), the declared sizes and the
// memory budget are checked before anything is allocated, and it takes an
// execution slot once its data has arrived. Between steps the stream holds
// nothing: its session is not in use (the idle reaper frees it after
// IdleTimeout, which ends the stream), no slot and no receive buffer beyond
// the session's kept ones; a drain ends it at once.
func (g *grpcServer) Session(st pb.Remote_SessionServer) error {
	gc, _ := st.Context().Value(connKey{}).(*grpcConn)
	if gc == nil {
		return status.Error(codes.Internal, "session stream: no connection state")
	}
	if n := gc.sessionStreams.Add(1); n > int64(g.s.cfg.MaxSessionStreams) {
		gc.sessionStreams.Add(-1)
		// The trailer tells this refusal apart from any other
		// ResourceExhausted: the client falls back on this one only.
		st.SetTrailer(metadata.Pairs(wire.SessionStreamHeader, wire.SessionStreamLimited))
		return status.Errorf(codes.ResourceExhausted, wire.SessionStreamLimitedBefore+"%d open (max %d); step over Step calls", n-1, g.s.cfg.MaxSessionStreams)
	}
	defer gc.sessionStreams.Add(-1)
	if !g.s.reserveConn(SessionStreamBytes) {
		st.SetTrailer(metadata.Pairs(wire.SessionStreamHeader, wire.SessionStreamLimited))
		return status.Errorf(codes.ResourceExhausted, "session stream: the memory budget of %d B has no room for a stream's %d B (%d B held by sessions and requests, %d B by connections and streams); step over Step calls",
			g.s.cfg.MemoryBudgetBytes, SessionStreamBytes, g.s.ReservedBytes(), g.s.ConnBytes())
	}
	defer g.s.releaseConn(SessionStreamBytes)
	g.s.streams.Add(1)
	defer g.s.streams.Add(-1)
	if err := st.SendHeader(metadata.Pairs(wire.SessionStreamHeader, "1")); err != nil {
		return err
	}
	cancel := streamCancel(st.Context())
	if cancel == nil {
		return status.Error(codes.Internal, "session stream: no stream cancel (the tap did not see it)")
	}
	defer cancel(nil) // ends the idle watch
	err := g.s.serveSession(st.Context(), gc.owner, newGRPCServerStream(st, g.s))
	if _, ok := status.FromError(err); !ok {
		return status.Errorf(codes.Unavailable, "session stream: %v", err)
	}
	return err
}

// serveSession runs steps on st until an error, the session's end or the
// server's drain.
func (s *Server) serveSession(ctx context.Context, owner string, st grpcServerStream) error {
	f, err := st.Recv() // the first header, under ReadTimeout
	if err != nil {
		return err
	}
	h := f.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "session stream: the first frame must be a header")
	}
	se, err := s.lookup(owner, h.SessionId)
	if err != nil {
		return err
	}
	w := s.watchIdle(ctx, se, st.stop)
	clk := newCallClockIn(ctx, nil, s.cfg.CallTimeout)
	defer clk.stop()
	for {
		sctx, cancel := clk.start(time.Now())
		err := s.serveHeader(sctx, owner, h, st)
		cancel()
		if err != nil {
			return err
		}
		if f, err = w.next(st); err != nil {
			return err
		}
		if h = f.GetHeader(); h == nil {
			return status.Error(codes.InvalidArgument, "session stream: a step must begin with a header")
		}
		if h.SessionId != se.id {
			return status.Errorf(codes.InvalidArgument, "session stream of session %.8s…: a step of session %.8s… (a stream carries one session's steps)", se.id, h.SessionId)
		}
	}
}

// idleWatch ends a session stream that waits for its next step when its
// session is freed or the server drains, by cancelling the stream (a step
// in progress is let finish: the stream ends at its next wait). The wait
// is the handler's own receive, so a step costs no goroutine and no
// hand-off between goroutines; one goroutine per stream watches.
type idleWatch struct {
	mu   sync.Mutex
	idle bool  // the handler waits for the next step's header
	why  error // set once: the session was freed or the server drains
	stop func(error)
}

func (s *Server) watchIdle(ctx context.Context, se *session, stop func(error)) *idleWatch {
	w := &idleWatch{stop: stop}
	go func() {
		var why error
		select {
		case <-se.freed:
			why = status.Errorf(codes.NotFound, "session %.8s…: freed (closed, idle longer than %v, its connection's end or the server's shutdown); its stream ends", se.id, s.cfg.IdleTimeout)
		case <-s.draining:
			why = status.Error(codes.Unavailable, "session stream: the server is shutting down")
		case <-ctx.Done(): // the stream ended
			return
		}
		w.mu.Lock()
		w.why = why
		if w.idle {
			w.stop(why)
		}
		w.mu.Unlock()
	}()
	return w
}

// next waits for the next step's header, with no read timeout (the stream
// is idle between steps), as long as the session is open and the server
// is not draining.
func (w *idleWatch) next(st grpcServerStream) (*pb.Frame, error) {
	w.mu.Lock()
	if w.why != nil {
		w.mu.Unlock()
		return nil, w.why
	}
	w.idle = true
	w.mu.Unlock()
	f, err := st.st.Recv()
	w.mu.Lock()
	w.idle = false
	why := w.why
	w.mu.Unlock()
	if why != nil {
		return nil, why
	}
	if err != nil {
		return nil, err
	}
	st.s.Bytes.Up(int64(len(f.GetData())), int64(proto.Size(f)+wire.GRPCPrefixBytes))
	return f, nil
}

// stepOnly is the Remote service without the Session RPC (ServerConfig.StepOnly).
type stepOnly struct {
	pb.UnimplementedRemoteServer
	g *grpcServer
}

func (o stepOnly) Open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	return o.g.Open(ctx, req)
}

func (o stepOnly) Close(ctx context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	return o.g.Close(ctx, req)
}

func (o stepOnly) Step(st pb.Remote_StepServer) error { return o.g.Step(st) }

func (o stepOnly) Generate(req *pb.GenerateRequest, st pb.Remote_GenerateServer) error {
	return o.g.Generate(req, st)
}
