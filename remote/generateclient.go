package remote

import (
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/partbench/partbench/remote/remotepb"

	"context"
	"fmt"
	"io"
	"sync"

	"github.com/partbench/partbench/remote/wire"
)

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
	if _, err := t.tc.WriteEnvelope(&pb.Envelope{Kind: &pb.Envelope_Generate{Generate: req}}); err != nil {
		return false, err
	}
	if err := t.tc.Flush(); err != nil {
		return false, err
	}
	for {
		e, _, err := t.tc.ReadEnvelope()
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, err
		}
		if err := wire.EnvelopeErr(e); err != nil {
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
