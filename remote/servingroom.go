package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pb "github.com/partbench/partbench/remote/remotepb"
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
func (s *Server) tcpGenerate(ctx context.Context, tc *tcpConn, req *pb.GenerateRequest) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// last: the last token is being sent, after which a client may send
	// its next call at once (kept in the reader for the loop).
	var stopping, last, gone atomic.Bool
	watched := make(chan struct{})
	if tc.r.Buffered() == 0 {
		go func() {
			defer close(watched)
			tc.r.Peek(1)
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
		if _, wrote = tc.write(&pb.Envelope{Kind: &pb.Envelope_Token{Token: t}}); wrote == nil {
			wrote = tc.flush()
		}
		return wrote
	})
	// Stop the watch (a read deadline in the past ends its Peek) and keep
	// whatever it buffered for the next call.
	stopping.Store(true)
	tc.c.SetReadDeadline(time.Unix(1, 0))
	<-watched
	tc.c.SetReadDeadline(time.Time{})
	if wrote != nil || gone.Load() {
		return false
	}
	if err != nil {
		if _, e := tc.write(errEnvelope(err)); e != nil {
			return false
		}
		return tc.flush() == nil
	}
	return true
}

// GenerateClient sends Generate calls over either transport: on gRPC as
// streams of one connection, on raw TCP one call per connection at a time,
// from a pool that grows to the calls in flight.
type GenerateClient struct {
	cfg  ClientConfig
	grpc *Client
	mu   sync.Mutex
	idle []*Client
	all  []*Client
}

// DialGenerate connects to a server that hosts a serving engine.
func DialGenerate(ctx context.Context, cfg ClientConfig) (*GenerateClient, error) {
	c := &GenerateClient{cfg: cfg}
	cl, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if g, ok := cl.t.(*grpcTransport); ok {
		// gRPC connects lazily: ask the health service (open without the
		// token) so an unreachable server is an error here, not a failure
		// of every request.
		hctx, cancel := cl.deadline(ctx)
		defer cancel()
		if _, err := healthpb.NewHealthClient(g.cc).Check(hctx, &healthpb.HealthCheckRequest{Service: pb.Remote_ServiceDesc.ServiceName}); err != nil {
			cl.Close()
			return nil, fmt.Errorf("client: server %s: %w", cfg.Addr, err)
		}
		c.grpc = cl
	} else {
		c.idle, c.all = []*Client{cl}, []*Client{cl}
	}
	return c, nil
}

// Generate sends one request and calls onToken with every token as it
// arrives; it returns nil after the last (done) token, or the server's
// error (a status naming what was refused), or ctx's.
func (c *GenerateClient) Generate(ctx context.Context, req *pb.GenerateRequest, onToken func(*pb.GenerateToken)) error {
	if c.grpc != nil {
		g := c.grpc.t.(*grpcTransport)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := g.rc.Generate(g.ctx(ctx), req)
		if err != nil {
			return err
		}
		for {
			t, err := st.Recv()
			if err == io.EOF {
				return fmt.Errorf("generate: the stream ended before the last token")
			}
			if err != nil {
				return err
			}
			onToken(t)
			if t.Done {
				return nil
			}
		}
	}
	cl, err := c.take(ctx)
	if err != nil {
		return err
	}
	ok, err := tcpGenerateCall(ctx, cl.t.(*tcpTransport), req, onToken)
	c.put(cl, ok)
	return err
}

// take is an idle raw-TCP connection, or a new one.
func (c *GenerateClient) take(ctx context.Context) (*Client, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		cl := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return cl, nil
	}
	c.mu.Unlock()
	cl, err := Dial(ctx, c.cfg)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.all = append(c.all, cl)
	c.mu.Unlock()
	return cl, nil
}

// put returns a connection to the pool, or closes it when its state is
// unknown (a call cut short).
func (c *GenerateClient) put(cl *Client, ok bool) {
	if !ok {
		cl.Close()
		return
	}
	c.mu.Lock()
	c.idle = append(c.idle, cl)
	c.mu.Unlock()
}

// tcpGenerateCall runs one Generate call on a raw-TCP connection; ok says
// whether the connection is fit for another call.
func tcpGenerateCall(ctx context.Context, t *tcpTransport, req *pb.GenerateRequest, onToken func(*pb.GenerateToken)) (ok bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	stop := t.bind(ctx)
	defer stop()
	if _, err := t.tc.write(&pb.Envelope{Kind: &pb.Envelope_Generate{Generate: req}}); err != nil {
		return false, err
	}
	if err := t.tc.flush(); err != nil {
		return false, err
	}
	for {
		e, _, err := t.tc.read()
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, err
		}
		if err := envelopeErr(e); err != nil {
			return true, err
		}
		tok := e.GetToken()
		if tok == nil {
			return false, fmt.Errorf("generate: unexpected reply %T", e.Kind)
		}
		onToken(tok)
		if tok.Done {
			return true, nil
		}
	}
}

// Close hangs up every connection.
func (c *GenerateClient) Close() error {
	if c.grpc != nil {
		return c.grpc.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.all {
		cl.Close()
	}
	c.all, c.idle = nil, nil
	return nil
}
