package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/wire"
)

// The serving room: `partbench serve --engine-config` hosts a
// continuous-batching engine (package serving's, which this package does
// not import) behind the same transports, token, TLS, budget and pre-auth
// bounds as the Step sessions. A Generate call carries a prompt length (or
// ids) and max tokens; the server streams every token back as the engine's
// iteration that made it ends, so a client times TTFT and each ITL.

// Generator is a serving engine the server hosts: one scheduler batching
// every request in flight.
type Generator interface {
	// Check refuses a request the engine can never serve (its sizes) with
	// the reason.
	Check(promptLen, maxTokens int) error
	// Generate runs one request and calls emit with every token as it is
	// made (done on the last); it returns when the last is emitted, or
	// when emit fails or ctx ends, and then frees the sequence's KV cache.
	Generate(ctx context.Context, promptLen, maxTokens int, emit func(token int, done bool) error) error
	// EngineBytes is what the engine holds (weights, KV slots, buffers):
	// reserved from the memory budget for the server's life.
	EngineBytes() int64
}

// hostGenerator reserves the engine's memory from the budget.
func (s *Server) hostGenerator() error {
	g := s.cfg.Generator
	if g == nil {
		return nil
	}
	n := g.EngineBytes()
	if n > s.cfg.MemoryBudgetBytes-smallHeadroom(s.cfg.MemoryBudgetBytes) {
		return fmt.Errorf("--memory-budget: the serving engine holds %d B (weights, KV slots, buffers), over the budget of %d B less its %d B of headroom",
			n, s.cfg.MemoryBudgetBytes, smallHeadroom(s.cfg.MemoryBudgetBytes))
	}
	s.mu.Lock()
	s.reserved += n
	s.mu.Unlock()
	return nil
}

// generate checks one Generate request and runs it on the engine; send
// carries each token to the client.
func (s *Server) generate(ctx context.Context, req *pb.GenerateRequest, send func(*pb.GenerateToken) error) error {
	g := s.cfg.Generator
	if g == nil {
		return status.Error(codes.Unimplemented, "this server hosts no serving engine (start partbench serve with --engine-config FILE)")
	}
	n := int(req.PromptLen)
	switch {
	case req.PromptLen < 0:
		return status.Errorf(codes.InvalidArgument, "prompt_len: must be ≥ 1 (got %d)", req.PromptLen)
	case len(req.PromptIds) > 0 && req.PromptLen != 0 && n != len(req.PromptIds):
		return status.Errorf(codes.InvalidArgument, "prompt_len %d and prompt_ids (%d ids) disagree: give one, or both alike", req.PromptLen, len(req.PromptIds))
	case len(req.PromptIds) > 0:
		n = len(req.PromptIds)
	}
	if err := g.Check(n, int(req.MaxTokens)); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	i := int32(0)
	var sendErr error
	err := g.Generate(ctx, n, int(req.MaxTokens), func(tok int, done bool) error {
		if tok > math.MaxInt32 || tok < math.MinInt32 {
			tok = -1
		}
		if sendErr = send(&pb.GenerateToken{Token: int32(tok), Index: i, Done: done}); sendErr != nil {
			return sendErr
		}
		i++
		return nil
	})
	switch {
	case err == nil:
		return nil
	case sendErr != nil:
		return sendErr
	case ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	}
	var over interface{ ResourceExhausted() bool }
	var bad interface{ InvalidArgument() bool }
	switch {
	case errors.As(err, &over):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.As(err, &bad):
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// Generate is the gRPC handler (auth and the call's deadline come from the
// server's interceptors; the client's cancel ends ctx and frees the
// sequence).
func (g *grpcServer) Generate(req *pb.GenerateRequest, st grpc.ServerStreamingServer[pb.GenerateToken]) error {
	return g.s.generate(st.Context(), req, st.Send)
}

// tcpGenerate serves one Generate envelope on a raw-TCP connection: a
// token envelope per token, flushed at once. The client sends nothing
// while its call runs, so the connection is watched meanwhile: its end
// (or any byte before the last token, a protocol error) ends the call, and
// the engine drops the sequence even before its first token. It reports whether the connection
// can serve another call.
func (s *Server) tcpGenerate(ctx context.Context, tc *wire.TCPConn, req *pb.GenerateRequest) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// last: the last token is being sent, after which a client may send
	// its next call at once (kept in the reader for the loop).
	var stopping, last, gone atomic.Bool
	watched := make(chan struct{})
	if tc.Reader().Buffered() == 0 {
		go func() {
			defer close(watched)
			tc.Reader().Peek(1)
			if !stopping.Load() && !last.Load() {
				gone.Store(true)
				cancel()
			}
		}()
	} else {
		close(watched) // a message already waits: a protocol error, seen after the call
	}
	var wrote error
	err := s.generate(ctx, req, func(t *pb.GenerateToken) error {
		if t.Done {
			last.Store(true)
		}
		if _, wrote = tc.WriteEnvelope(&pb.Envelope{Kind: &pb.Envelope_Token{Token: t}}); wrote == nil {
			wrote = tc.Flush()
		}
		return wrote
	})
	// Stop the watch (a read deadline in the past ends its Peek) and keep
	// whatever it buffered for the next call.
	stopping.Store(true)
	tc.Conn().SetReadDeadline(time.Unix(1, 0))
	<-watched
	tc.Conn().SetReadDeadline(time.Time{})
	if wrote != nil || gone.Load() {
		return false
	}
	if err != nil {
		if _, e := tc.WriteEnvelope(wire.ErrEnvelope(err)); e != nil {
			return false
		}
		return tc.Flush() == nil
	}
	return true
}
