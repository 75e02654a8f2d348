package remote

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/server"
)

// countGen is a server.Generator whose token i of a request of p prompt tokens
// is p·1000 + i; it counts the requests that ended (returned) and those cut
// short by the client (ctx ended or emit failed); a prompt of 999 tokens
// waits for its ctx to end without a token (a request still queued).
type countGen struct {
	maxContext          int
	bytes               int64
	started, ended, cut atomic.Int64
}

func (g *countGen) Check(p, m int) error {
	if p < 1 || m < 1 || p+m > g.maxContext {
		return fmt.Errorf("prompt + max_tokens: %d + %d tokens, the engine holds %d per sequence (--engine-context)", p, m, g.maxContext)
	}
	return nil
}

func (g *countGen) EngineBytes() int64 { return g.bytes }

func (g *countGen) Generate(ctx context.Context, p, m int, emit func(int, bool) error) error {
	g.started.Add(1)
	defer g.ended.Add(1)
	if p == 999 { // a request that waits in the queue: no token until ctx ends
		<-ctx.Done()
		g.cut.Add(1)
		return ctx.Err()
	}
	for i := 0; i < m; i++ {
		if err := ctx.Err(); err != nil {
			g.cut.Add(1)
			return err
		}
		if err := emit(p*1000+i, i == m-1); err != nil {
			g.cut.Add(1)
			return err
		}
	}
	return nil
}

func dialGen(t *testing.T, addr, transport, token string) *GenerateClient {
	t.Helper()
	c, err := DialGenerate(ctx(t), ClientConfig{Addr: addr, Transport: transport, Token: token, CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Generate streams every token, in order, the last marked done, on both
// transports; a prompt may come as ids (their count is its length); the
// same raw-TCP connection serves the next call.
func TestGenerateStreamsTokens(t *testing.T) {
	g := &countGen{maxContext: 64}
	_, addrs := startServer(t, server.ServerConfig{Generator: g}, &server.ArithEngine{})
	for _, tr := range []string{"grpc", "tcp"} {
		c := dialGen(t, addrs[tr], tr, "")
		for _, req := range []*pb.GenerateRequest{{PromptLen: 5, MaxTokens: 4}, {PromptIds: []int32{7, 8, 9}, MaxTokens: 3}} {
			var got []string
			err := c.Generate(ctx(t), req, func(tk *pb.GenerateToken) { got = append(got, fmt.Sprintf("%d:%d:%v", tk.Index, tk.Token, tk.Done)) })
			p := int(req.PromptLen) + len(req.PromptIds)
			var want []string
			for i := 0; i < int(req.MaxTokens); i++ {
				want = append(want, fmt.Sprintf("%d:%d:%v", i, p*1000+i, i == int(req.MaxTokens)-1))
			}
			if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s %v: %v, tokens %v, want %v", tr, req, err, got, want)
			}
		}
		if tr == "tcp" && len(c.all) != 1 {
			t.Errorf("tcp: %d connections for two calls one after the other, want 1", len(c.all))
		}
	}
}

// What the engine cannot serve is refused with InvalidArgument naming the
// field and the limit, on both transports, and the connection serves the
// next call; a server without an engine says how to start one; a call
// without the token is refused before anything runs.
func TestGenerateRefuses(t *testing.T) {
	g := &countGen{maxContext: 64}
	_, addrs := startServer(t, server.ServerConfig{Generator: g, Token: "tok"}, &server.ArithEngine{})
	_, bare := startServer(t, server.ServerConfig{}, &server.ArithEngine{})
	for _, tr := range []string{"grpc", "tcp"} {
		c := dialGen(t, addrs[tr], tr, "tok")
		for _, tc := range []struct {
			req  *pb.GenerateRequest
			want string
		}{
			{&pb.GenerateRequest{PromptLen: 60, MaxTokens: 10}, "--engine-context"},
			{&pb.GenerateRequest{PromptLen: -1, MaxTokens: 10}, "prompt_len"},
			{&pb.GenerateRequest{PromptLen: 2, PromptIds: []int32{1, 2, 3}, MaxTokens: 10}, "disagree"},
			{&pb.GenerateRequest{PromptLen: 2, MaxTokens: 0}, "max_tokens"},
		} {
			err := c.Generate(ctx(t), tc.req, func(*pb.GenerateToken) { t.Errorf("%s %v: a token", tr, tc.req) })
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %v: %v, want InvalidArgument naming %q", tr, tc.req, err, tc.want)
			}
		}
		// A prompt of ids over the server's message limit (4 MiB: 2.5 M
		// ids of 2 bytes each), from a client that allows 16 MiB, is
		// refused by the transport before the engine: gRPC says
		// ResourceExhausted; the raw-TCP server replies so and hangs up,
		// which a client still writing sees as a reset connection (or a
		// broken pipe, or the end of the stream).
		huge := make([]int32, 5<<19)
		for i := range huge {
			huge[i] = 200
		}
		big, err := DialGenerate(ctx(t), ClientConfig{Addr: addrs[tr], Transport: tr, Token: "tok", MaxMessageBytes: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		err = big.Generate(ctx(t), &pb.GenerateRequest{PromptIds: huge, MaxTokens: 1}, func(*pb.GenerateToken) {})
		big.Close()
		if status.Code(err) != codes.ResourceExhausted && !(tr == "tcp" && err != nil && (strings.Contains(err.Error(), "reset") || strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "EOF"))) {
			t.Errorf("%s: a 5 MB request: %v, want ResourceExhausted", tr, err)
		}
		if err := c.Generate(ctx(t), &pb.GenerateRequest{PromptLen: 2, MaxTokens: 2}, func(*pb.GenerateToken) {}); err != nil {
			t.Errorf("%s: after the refusals: %v", tr, err)
		}
		nc := dialGen(t, bare[tr], tr, "")
		if err := nc.Generate(ctx(t), &pb.GenerateRequest{PromptLen: 2, MaxTokens: 2}, func(*pb.GenerateToken) {}); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "--engine-config") {
			t.Errorf("%s without an engine: %v", tr, err)
		}
		if tr == "grpc" {
			wc := dialGen(t, addrs[tr], tr, "wrong")
			if err := wc.Generate(ctx(t), &pb.GenerateRequest{PromptLen: 2, MaxTokens: 2}, func(*pb.GenerateToken) {}); status.Code(err) != codes.Unauthenticated {
				t.Errorf("grpc with the wrong token: %v", err)
			}
		} else if _, err := DialGenerate(ctx(t), ClientConfig{Addr: addrs[tr], Transport: tr, Token: "wrong"}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("tcp with the wrong token: %v", err)
		}
	}
	// The engine's request returns after its last token reaches the
	// client, so the count is awaited; the refused requests never started.
	waitFor(t, 20*time.Second, func() bool { return g.ended.Load() >= 2 }, "the engine ended the 2 requests it could serve")
	if g.started.Load() != 2 || g.ended.Load() != 2 {
		t.Errorf("the engine started %d and ended %d requests, want the 2 it could serve", g.started.Load(), g.ended.Load())
	}
	if _, err := server.NewServer(server.ServerConfig{Generator: &countGen{maxContext: 8, bytes: 2 << 30}}, &server.ArithEngine{}); err == nil || !strings.Contains(err.Error(), "--memory-budget") {
		t.Errorf("an engine over the budget: %v", err)
	}
}

// A client that goes away mid-stream ends the engine's request (which
// frees its sequence), on both transports: gRPC by cancelling the stream,
// raw TCP by closing the connection (the server's next write fails).
func TestGenerateDisconnectEndsRequest(t *testing.T) {
	g := &countGen{maxContext: 1 << 21}
	_, addrs := startServer(t, server.ServerConfig{Generator: g}, &server.ArithEngine{})
	for i, tr := range []string{"grpc", "tcp"} {
		c := dialGen(t, addrs[tr], tr, "")
		cctx, cancel := context.WithCancel(ctx(t))
		first := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- c.Generate(cctx, &pb.GenerateRequest{PromptLen: 1, MaxTokens: 1 << 20}, func(tk *pb.GenerateToken) {
				if tk.Index == 0 {
					close(first)
				}
			})
		}()
		<-first
		cancel()
		if err := <-done; err == nil {
			t.Errorf("%s: a cancelled call returned nil", tr)
		}
		waitFor(t, 20*time.Second, func() bool { return g.cut.Load() == int64(i+1) }, tr+": the engine's request ended")
	}
	// A request still waiting for its first token ends too when its client
	// goes away (on raw TCP the server watches the silent connection).
	for i, tr := range []string{"grpc", "tcp"} {
		c := dialGen(t, addrs[tr], tr, "")
		cctx, cancel := context.WithCancel(ctx(t))
		done := make(chan error, 1)
		go func() {
			done <- c.Generate(cctx, &pb.GenerateRequest{PromptLen: 999, MaxTokens: 4}, func(*pb.GenerateToken) { t.Errorf("%s: a token", tr) })
		}()
		waitFor(t, 20*time.Second, func() bool { return g.started.Load() == int64(3+i) }, tr+": the waiting request reached the engine")
		cancel()
		<-done
		waitFor(t, 20*time.Second, func() bool { return g.cut.Load() == int64(3+i) }, tr+": the waiting request ended")
	}
	// The raw-TCP connection of a call that finished normally serves the
	// next one (the watch gave the connection back).
	c := dialGen(t, addrs["tcp"], "tcp", "")
	for range 3 {
		if err := c.Generate(ctx(t), &pb.GenerateRequest{PromptLen: 2, MaxTokens: 3}, func(*pb.GenerateToken) {}); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.all) != 1 {
		t.Errorf("%d raw-TCP connections for three calls in turn, want 1", len(c.all))
	}
}

// Generate over TLS on both transports: three calls in turn on one raw-TCP
// connection (the watch of the silent connection reads through TLS and
// leaves it usable), tokens in order; a client that goes away while its
// request waits ends it there too.
func TestGenerateOverTLS(t *testing.T) {
	cert, key := selfSigned(t, t.TempDir())
	g := &countGen{maxContext: 2000}
	_, addrs := startServer(t, server.ServerConfig{Generator: g, Token: "tls-token", TLSCert: cert, TLSKey: key}, &server.ArithEngine{})
	for _, tr := range []string{"grpc", "tcp"} {
		c, err := DialGenerate(ctx(t), ClientConfig{Addr: addrs[tr], Transport: tr, Token: "tls-token", TLSCA: cert, CallTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			n := 0
			if err := c.Generate(ctx(t), &pb.GenerateRequest{PromptLen: 3, MaxTokens: 5}, func(tk *pb.GenerateToken) {
				if tk.Index != int32(n) || tk.Token != int32(3000+n) {
					t.Errorf("%s: token %d is %d:%d", tr, n, tk.Index, tk.Token)
				}
				n++
			}); err != nil || n != 5 {
				t.Errorf("%s: %v after %d tokens", tr, err, n)
			}
		}
		if tr == "tcp" && len(c.all) != 1 {
			t.Errorf("tcp: %d connections for three calls in turn", len(c.all))
		}
		before := g.cut.Load()
		cctx, cancel := context.WithCancel(ctx(t))
		done := make(chan error, 1)
		go func() {
			done <- c.Generate(cctx, &pb.GenerateRequest{PromptLen: 999, MaxTokens: 4}, func(*pb.GenerateToken) {})
		}()
		waitFor(t, 20*time.Second, func() bool { return g.started.Load() == g.ended.Load()+1 }, tr+": the waiting request reached the engine")
		cancel()
		<-done
		waitFor(t, 20*time.Second, func() bool { return g.cut.Load() == before+1 }, tr+": the waiting request ended")
		c.Close()
	}
}
