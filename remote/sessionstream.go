package remote

import (
	"context"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/wire"
)

// sessionStream is a gRPC session's Session stream: opened on the
// session's first step and kept open, each step then one request and one
// reply on it, in order (a step is a new HTTP/2 stream otherwise). A step
// that finds the stream busy with another of the session's steps, or a
// session whose server refused the stream, goes over a Step call.
type sessionStream struct {
	mu sync.Mutex // held by the step on the stream
	st pb.Remote_SessionClient
	// cancel ends the stream (set and cleared by the holder of mu, under
	// cmu too: Session.Close calls it without waiting for a step).
	cancel context.CancelFunc
	off    bool // the server refused a stream for this session: Step calls
	cur    sessionStep

	cmu    sync.Mutex
	closed bool // Session.Close began: the stream is closed and none opens
}

// sessionStep is one step on the stream (the clientStream it runs on).
type sessionStep struct {
	ss   *sessionStream
	stop func() bool // ends the watch of the step's context
	done bool        // the reply's trailer arrived: the stream is ready for the next step
}

// begin starts a step of session id on its stream, opening the stream if
// there is none; nil (and no error) means the step goes over a Step call.
func (g *grpcTransport) begin(ctx context.Context, ss *sessionStream) (clientStream, error) {
	if g.stepOnly.Load() || !ss.mu.TryLock() {
		return nil, nil
	}
	if ss.off {
		ss.mu.Unlock()
		return nil, nil
	}
	ctx, cancel := g.c.deadline(ctx)
	if ss.st == nil {
		ok, err := g.openStream(ctx, ss)
		if err != nil || !ok {
			cancel()
			ss.mu.Unlock()
			return nil, err
		}
	}
	// The step's context ends the stream (its state is then unknown).
	streamCancel := ss.cancel
	watch := context.AfterFunc(ctx, streamCancel)
	ss.cur = sessionStep{ss: ss, stop: func() bool { ok := watch(); cancel(); return ok }}
	return &ss.cur, nil
}

// openStream opens the session's stream and waits for the server's
// response headers: the server sends them before reading, so the answer
// costs one round trip, once per session. A server without the Session
// RPC (Unimplemented) turns streams off for the connection; one that
// refuses this stream for its per-connection limit (ResourceExhausted
// with the trailer wire.SessionStreamLimited) for the session. false: use
// Step calls. Any other refusal (another ResourceExhausted, such as the
// memory budget's) is the step's error: a fallback would hide it.
func (g *grpcTransport) openStream(ctx context.Context, ss *sessionStream) (bool, error) {
	sctx, scancel := context.WithCancel(g.ctx(context.Background()))
	stop := context.AfterFunc(ctx, scancel)
	defer stop()
	if !ss.setCancel(scancel) {
		return false, nil // the session is closing: its step goes over a Step call, which says so
	}
	st, err := g.rc.Session(sctx, grpc.ForceCodecV2(wire.Frames))
	if err != nil {
		ss.setCancel(nil)
		scancel()
		return false, err
	}
	md, err := st.Header()
	if err == nil && len(md.Get(wire.SessionStreamHeader)) == 1 {
		ss.st = st
		return true, nil
	}
	ss.setCancel(nil)
	if err == nil {
		_, err = st.Recv() // the stream ended at once: its status says why
	}
	scancel()
	switch status.Code(err) {
	case codes.Unimplemented:
		g.stepOnly.Store(true)
		return false, nil
	case codes.ResourceExhausted:
		if streamLimitRefusal(err, st.Trailer()) {
			ss.off = true
			return false, nil
		}
	}
	if ctx.Err() != nil {
		return false, status.FromContextError(ctx.Err()).Err()
	}
	return false, err
}

// setCancel records the open stream's cancel (nil: none) unless the
// session is closing; false then.
func (ss *sessionStream) setCancel(c context.CancelFunc) bool {
	ss.cmu.Lock()
	defer ss.cmu.Unlock()
	if ss.closed && c != nil {
		return false
	}
	ss.cancel = c
	return true
}

func (ss *sessionStream) isClosed() bool {
	ss.cmu.Lock()
	defer ss.cmu.Unlock()
	return ss.closed
}

// end closes the stream at once, whether or not a step is on it: a step
// on it fails (Session.Step says the session was closed under it) and the
// server's end of the stream ends with it, which ends a step running there.
// No stream opens for the session after it.
func (ss *sessionStream) end() {
	ss.cmu.Lock()
	ss.closed = true
	if ss.cancel != nil {
		ss.cancel()
	}
	ss.cmu.Unlock()
	if ss.mu.TryLock() {
		ss.st = nil
		ss.setCancel(nil)
		ss.mu.Unlock()
	}
}

func (s *sessionStep) Send(f *pb.Frame) error { return s.ss.st.Send(f) }

// CloseSend ends the request, not the stream: gRPC has sent each message
// already.
func (s *sessionStep) CloseSend() error { return nil }

func (s *sessionStep) Recv() (*pb.Frame, error) {
	f, err := s.ss.st.Recv()
	if err != nil {
		return nil, trailerStatus(s.ss.st, err)
	}
	if f.GetTrailer() != nil {
		s.done = true
	}
	return f, nil
}

func (s *sessionStep) sendData(d []byte) (int64, error) {
	return int64(wire.DataHeaderLen(len(d)) + len(d) + wire.GRPCPrefixBytes), s.ss.st.SendMsg(&wire.DataOut{Data: d})
}

func (s *sessionStep) recvData(dst []byte) (int, int64, error) {
	d := &wire.DataIn{Dst: dst}
	if err := s.ss.st.RecvMsg(d); err != nil {
		return 0, 0, trailerStatus(s.ss.st, err)
	}
	return d.N, int64(d.Wire + wire.GRPCPrefixBytes), nil
}

func (s *sessionStep) wire(f *pb.Frame) int64 { return int64(proto.Size(f) + wire.GRPCPrefixBytes) }

// finish ends the step; a step that did not end with its trailer, or whose
// context ended, leaves the stream in an unknown state: it is closed, and
// the session's next step opens another. A session closed meanwhile has
// its stream closed already (end).
func (s *sessionStep) finish() {
	ss := s.ss
	if !s.stop() || !s.done || ss.isClosed() {
		ss.cancel()
		ss.st = nil
		ss.setCancel(nil)
	}
	ss.cur = sessionStep{}
	ss.mu.Unlock()
}

// streamLimitRefusal says whether err, a ResourceExhausted at a session
// stream's open with trailer tl, is the server's per-connection stream
// limit: marked by the trailer wire.SessionStreamLimited, or, from a server
// built before the trailer, by that refusal's message
// (wire.SessionStreamLimitedBefore). Any other ResourceExhausted (the
// memory budget's) is not.
func streamLimitRefusal(err error, tl metadata.MD) bool {
	if status.Code(err) != codes.ResourceExhausted {
		return false
	}
	if slices.Contains(tl.Get(wire.SessionStreamHeader), wire.SessionStreamLimited) {
		return true
	}
	return strings.HasPrefix(status.Convert(err).Message(), wire.SessionStreamLimitedBefore)
}
