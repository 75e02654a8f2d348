package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

var transports = []string{"grpc", "tcp"}

func testConfig(t testing.TB, name string) (*configs.Config, *partition.Plan) {
	t.Helper()
	c, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	c.Parallel.TP, c.Parallel.PP, c.Parallel.LayerMap = 1, 1, nil
	c.Topology.Nodes, c.Topology.GPUsPerNode = 1, 1
	p, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// startServer serves both transports on loopback, port 0, and drains at the end.
func startServer(t testing.TB, cfg server.ServerConfig, eng wire.Engine) (*server.Server, map[string]string) {
	t.Helper()
	s, err := server.NewServer(cfg, eng)
	if err != nil {
		t.Fatal(err)
	}
	ga, err := s.ListenGRPC("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ta, err := s.ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s, map[string]string{"grpc": ga.String(), "tcp": ta.String()}
}

func dial(t testing.TB, addr, transport, token string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, ClientConfig{Addr: addr, Transport: transport, Token: token, CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Every mode on both transports computes the same tokens as the local run,
// and the payload bytes the transport counted on every call equal
// partition's Program-derived bytes exactly.
func TestGenerateEveryMode(t *testing.T) {
	eng := &server.ArithEngine{}
	srv, addrs := startServer(t, server.ServerConfig{}, eng)
	for _, name := range []string{"test/single-tiny", "test/layerwise16-tiny"} {
		cfg, plan := testConfig(t, name)
		prompt := SeededPrompt(plan)
		weights, err := server.SeededWeights(plan)
		if err != nil {
			t.Fatal(err)
		}
		local, err := GenerateLocal(ctx(t), eng, plan, prompt)
		if err != nil {
			t.Fatal(err)
		}
		if len(local.Tokens) != plan.Config.Workload.OutputTokens {
			t.Fatalf("%s local: %d token steps, want %d", name, len(local.Tokens), plan.Config.Workload.OutputTokens)
		}
		for _, tr := range transports {
			perStep := map[partition.RemoteMode]int64{}
			for _, mode := range []partition.RemoteMode{partition.RemoteNaive, partition.RemoteKV, partition.RemoteStateful} {
				c := dial(t, addrs[tr], tr, "")
				before := srv.Bytes.Snapshot()
				s, err := c.Open(ctx(t), cfg, mode, partition.RemoteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				g, err := Generate(ctx(t), s, weights, prompt)
				if err != nil {
					t.Fatalf("%s %s %s: %v", name, tr, mode, err)
				}
				if !slices.EqualFunc(g.Tokens, local.Tokens, slices.Equal) {
					t.Errorf("%s %s %s: tokens %v, local run made %v", name, tr, mode, g.Tokens, local.Tokens)
				}
				open, _ := plan.RemoteOpenBytes(mode)
				if g.Open.PayloadUp != open || g.Open.PayloadDown != 0 {
					t.Errorf("%s %s %s: open moved %d B up, %d down; want %d, 0", name, tr, mode, g.Open.PayloadUp, g.Open.PayloadDown, open)
				}
				total := g.Open
				for _, call := range g.Calls {
					want, err := plan.RemoteBytesOf(mode, partition.RemoteRequest{Phase: call.Phase, Step: call.Step}, partition.RemoteOptions{})
					if err != nil {
						t.Fatal(err)
					}
					b := call.Result.Bytes
					if b.PayloadUp != want.Up() || b.PayloadDown != want.Down() {
						t.Errorf("%s %s %s %s/%d: payload %d up %d down, Program says %d and %d",
							name, tr, mode, call.Phase, call.Step, b.PayloadUp, b.PayloadDown, want.Up(), want.Down())
					}
					if b.WireUp <= b.PayloadUp || b.WireDown <= b.PayloadDown {
						t.Errorf("%s %s %s: wire bytes %+v not above payload", name, tr, mode, b)
					}
					if call.Phase == partition.Decode && call.Step == 0 {
						perStep[mode] = want.Total()
					}
					total = total.Add(b)
				}
				// The server counted the same bytes at its end of the transport.
				if got := srv.Bytes.Snapshot(); got.PayloadUp-before.PayloadUp != total.PayloadUp || got.WireDown-before.WireDown != total.WireDown {
					t.Errorf("%s %s %s: server counted %d up / %d wire down, client %d / %d",
						name, tr, mode, got.PayloadUp-before.PayloadUp, got.WireDown-before.WireDown, total.PayloadUp, total.WireDown)
				}
				if err := s.Close(ctx(t)); err != nil {
					t.Fatal(err)
				}
			}
			if !(perStep[partition.RemoteNaive] > perStep[partition.RemoteKV] && perStep[partition.RemoteKV] > perStep[partition.RemoteStateful] && perStep[partition.RemoteStateful] > 0) {
				t.Errorf("%s %s: bytes per decode step not naive > kv > stateful > 0: %v", name, tr, perStep)
			}
		}
	}
	if n := srv.Sessions(); n != 0 {
		t.Errorf("%d sessions left open after every client closed its own", n)
	}
}

func TestNonLoopbackNeedsToken(t *testing.T) {
	s, err := server.NewServer(server.ServerConfig{}, &server.ArithEngine{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	for _, listen := range []func(string) (net.Addr, error){s.ListenGRPC, s.ListenTCP} {
		for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
			if _, err := listen(addr); err == nil || !strings.Contains(err.Error(), "requires a token") {
				t.Errorf("listen %s without a token: %v, want a refusal naming the token", addr, err)
			}
		}
	}
	withTok, err := server.NewServer(server.ServerConfig{Token: "s3cret"}, &server.ArithEngine{})
	if err != nil {
		t.Fatal(err)
	}
	defer withTok.Shutdown(context.Background())
	if _, err := withTok.ListenTCP("0.0.0.0:0"); err != nil {
		t.Errorf("non-loopback with a token: %v", err)
	}
}

func TestTokenRequired(t *testing.T) {
	_, addrs := startServer(t, server.ServerConfig{Token: "right-token"}, &server.ArithEngine{})
	cfg, _ := testConfig(t, "test/single-tiny")
	for _, tr := range transports {
		for _, tok := range []string{"", "wrong-token", "right-token-but-longer"} {
			c, err := Dial(ctx(t), ClientConfig{Addr: addrs[tr], Transport: tr, Token: tok})
			if err == nil {
				_, err = c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
				c.Close()
			}
			if status.Code(errors.Unwrap(err)) != codes.Unauthenticated && status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s token %q: %v, want Unauthenticated", tr, tok, err)
			}
		}
		c := dial(t, addrs[tr], tr, "right-token")
		if _, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{}); err != nil {
			t.Errorf("%s right token: %v", tr, err)
		}
	}
	// The standard health service answers without a token (load balancers).
	cc, err := grpc.NewClient("passthrough:///"+addrs["grpc"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	h, err := healthpb.NewHealthClient(cc).Check(ctx(t), &healthpb.HealthCheckRequest{Service: pb.Remote_ServiceDesc.ServiceName})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v, %v", h, err)
	}
}

// A message over the server's limit fails that client with a clear error
// while another client's generation completes.
func TestOversizedMessageRefused(t *testing.T) {
	eng := &server.ArithEngine{Delay: 20 * time.Millisecond}
	_, addrs := startServer(t, server.ServerConfig{MaxMessageBytes: 64 << 10, MaxConcurrent: 2}, eng)
	cfg, plan := testConfig(t, "test/single-tiny")
	for _, tr := range transports {
		good := dial(t, addrs[tr], tr, "")
		gs, err := good.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := Generate(ctx(t), gs, nil, SeededPrompt(plan))
			done <- err
		}()
		bad, err := Dial(ctx(t), ClientConfig{Addr: addrs[tr], Transport: tr, MaxMessageBytes: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer bad.Close()
		bs, err := bad.Open(ctx(t), cfg, partition.RemoteNaive, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bs.maxChunk = 1 << 20 // past the server's 64 KiB limit
		ws, _ := server.SeededWeights(plan)
		_, err = bs.Step(ctx(t), partition.Prefill, 0, ws)
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%s oversized: %v, want ResourceExhausted naming the size", tr, err)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: the other client failed: %v", tr, err)
		}
	}
}

func waitFor(t *testing.T, bound time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A client that hangs up has its sessions freed at once (bound: 2 s here,
// wire.DisconnectBound for a peer that vanishes without closing its socket).
func TestDisconnectFreesSession(t *testing.T) {
	srv, addrs := startServer(t, server.ServerConfig{}, &server.ArithEngine{})
	cfg, _ := testConfig(t, "test/single-tiny")
	for _, tr := range transports {
		c, err := Dial(ctx(t), ClientConfig{Addr: addrs[tr], Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if srv.Sessions() != 1 || srv.ReservedBytes() != s.Bytes || s.Bytes <= 0 {
			t.Fatalf("%s: %d sessions reserving %d B, want 1 of %d", tr, srv.Sessions(), srv.ReservedBytes(), s.Bytes)
		}
		c.Close()
		waitFor(t, 2*time.Second, func() bool { return srv.Sessions() == 0 && srv.ReservedBytes() == 0 }, tr+" session freed after disconnect")
	}
}

func TestIdleTimeoutFreesSession(t *testing.T) {
	srv, addrs := startServer(t, server.ServerConfig{IdleTimeout: 100 * time.Millisecond}, &server.ArithEngine{})
	cfg, _ := testConfig(t, "test/single-tiny")
	c := dial(t, addrs["grpc"], "grpc", "")
	s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, func() bool { return srv.Sessions() == 0 }, "idle session freed")
	_, err = s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(4, SeededPrompt(s.Plan))})
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "idle") {
		t.Errorf("step on an idle-freed session: %v", err)
	}
}

func TestMemoryBudgetRefusesBeforeAllocating(t *testing.T) {
	cfg, plan := testConfig(t, "test/single-tiny")
	need, _ := plan.RemoteSessionBytes(partition.RemoteStateful)
	srv, addrs := startServer(t, server.ServerConfig{MemoryBudgetBytes: need + need/2}, &server.ArithEngine{})
	c := dial(t, addrs["tcp"], "tcp", "")
	if _, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Open(ctx(t), cfg, partition.RemoteKV, partition.RemoteOptions{})
	want := fmt.Sprintf("needs %d B", need)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("%d B are free", need/2)) {
		t.Errorf("second session: %v, want ResourceExhausted with %q", err, want)
	}
	if srv.Sessions() != 1 || srv.ReservedBytes() != need {
		t.Errorf("after the refusal: %d sessions, %d B reserved; want 1 and %d", srv.Sessions(), srv.ReservedBytes(), need)
	}
}

// A session id is useless on another connection, and looks like no session.
func TestSessionBoundToConnection(t *testing.T) {
	_, addrs := startServer(t, server.ServerConfig{}, &server.ArithEngine{})
	cfg, plan := testConfig(t, "test/single-tiny")
	for _, tr := range transports {
		a, b := dial(t, addrs[tr], tr, ""), dial(t, addrs[tr], tr, "")
		sa, err := a.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(sa.ID) != 32 {
			t.Errorf("session id %q: want 128 random bits in hex", sa.ID)
		}
		stolen := *sa
		stolen.c = b
		_, err = stolen.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(4, SeededPrompt(plan))})
		if status.Code(err) != codes.NotFound {
			t.Errorf("%s: another connection's step: %v, want NotFound", tr, err)
		}
		// The raw-TCP server hangs up after a failed step (the stream's
		// state is unknown): try the close on a fresh connection.
		stolen.c = dial(t, addrs[tr], tr, "")
		if err := stolen.Close(ctx(t)); status.Code(err) != codes.NotFound {
			t.Errorf("%s: another connection's close: %v, want NotFound", tr, err)
		}
		if _, err := Generate(ctx(t), sa, nil, SeededPrompt(plan)); err != nil {
			t.Errorf("%s: owner's generation after the attempts: %v", tr, err)
		}
	}
}

// Shutdown lets a running step finish, then refuses new work, on both
// transports.
func TestGracefulDrain(t *testing.T) {
	for _, tr := range transports {
		eng := newGateEngine(&server.ArithEngine{})
		srv, err := server.NewServer(server.ServerConfig{}, eng)
		if err != nil {
			t.Fatal(err)
		}
		ga, _ := srv.ListenGRPC("127.0.0.1:0")
		ta, _ := srv.ListenTCP("127.0.0.1:0")
		addr := map[string]string{"grpc": ga.String(), "tcp": ta.String()}[tr]
		cfg, plan := testConfig(t, "test/single-tiny")
		c := dial(t, addr, tr, "")
		s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(4, SeededPrompt(plan))})
			done <- err
		}()
		eng.waitStarted(t, 1) // the step is in the engine, held there until the gate opens
		drained := make(chan error, 1)
		go func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			drained <- srv.Shutdown(sctx)
		}()
		// The drain has begun once both listeners refuse connections.
		waitFor(t, 10*time.Second, func() bool {
			for _, a := range []string{ga.String(), ta.String()} {
				if conn, err := net.Dial("tcp", a); err == nil {
					conn.Close()
					return false
				}
			}
			return true
		}, tr+": listeners closed by Shutdown")
		select {
		case err := <-drained:
			t.Fatalf("%s: Shutdown returned (%v) while a step was still running", tr, err)
		default:
		}
		close(eng.open)
		if err := <-drained; err != nil {
			t.Errorf("%s: drain: %v", tr, err)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: the in-flight step was cut off: %v", tr, err)
		}
		// New work is refused on this transport: the dial fails, or (gRPC
		// connects lazily) the first call does.
		nc, err := Dial(ctx(t), ClientConfig{Addr: addr, Transport: tr, CallTimeout: 2 * time.Second})
		if err == nil {
			_, err = nc.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			nc.Close()
		}
		if err == nil {
			t.Errorf("%s: a new session was opened after shutdown", tr)
		}
		if srv.Sessions() != 0 {
			t.Errorf("%s: %d sessions after shutdown", tr, srv.Sessions())
		}
	}
}

// Beyond MaxConcurrent executing and MaxQueue waiting, a request is refused
// by name; a queued one reports its wait.
func TestBoundedQueue(t *testing.T) {
	eng := newGateEngine(&server.ArithEngine{})
	srv, addrs := startServer(t, server.ServerConfig{MaxConcurrent: 1, MaxQueue: 1}, eng)
	cfg, plan := testConfig(t, "test/single-tiny")
	type res struct {
		r   *StepResult
		err error
	}
	var out [3]chan res
	var seenQueued time.Time
	for i := range out {
		c := dial(t, addrs["grpc"], "grpc", "")
		s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = make(chan res, 1)
		go func() {
			r, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(4, SeededPrompt(plan))})
			out[i] <- res{r, err}
		}()
		switch i {
		case 0:
			eng.waitStarted(t, 1) // the first executes (held in the engine)
		case 1:
			waitFor(t, 10*time.Second, func() bool { return srv.Waiting() == 1 }, "the second request queued")
			seenQueued = time.Now()
		}
	}
	// The third finds the slot taken and the queue full.
	third := <-out[2]
	if status.Code(third.err) != codes.ResourceExhausted || !strings.Contains(third.err.Error(), "queue full") {
		t.Errorf("the third request: %v, want ResourceExhausted naming the full queue", third.err)
	}
	opened := time.Now()
	close(eng.open)
	first, second := <-out[0], <-out[1]
	if first.err != nil || second.err != nil {
		t.Fatalf("served requests failed: %v, %v", first.err, second.err)
	}
	// The second was already waiting when it was seen queued and could not
	// leave the queue before the gate opened and the first finished: its
	// reported wait covers at least that span (a bound from the order of
	// events, not from a guess at how fast the machine is).
	if min := opened.Sub(seenQueued); second.r.QueueWait < min || second.r.QueueWait <= 0 {
		t.Errorf("the queued request reports a wait of %v; it waited at least %v", second.r.QueueWait, min)
	}
}
