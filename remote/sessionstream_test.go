package remote

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// statefulSteps runs a stateful prefill and three decodes on a fresh
// session of c and returns each step's byte counts.
func statefulSteps(t *testing.T, c *Client) (*Session, []commcount.TransferSnapshot) {
	t.Helper()
	cfg, plan := testConfig(t, "test/single-tiny")
	s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := plan.Config.Workload.Batch
	r, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(b, SeededPrompt(plan))})
	if err != nil {
		t.Fatal(err)
	}
	out := []commcount.TransferSnapshot{r.Bytes}
	for i := 0; i < 3; i++ {
		r, err := s.Step(ctx(t), partition.Decode, i, []wire.Tensor{tokensTensor(b, make([]uint32, b))})
		if err != nil {
			t.Fatalf("decode %d: %v", i, err)
		}
		out = append(out, r.Bytes)
	}
	return s, out
}

// TestSessionStreamCarriesSteps: a gRPC session's steps go on one open
// Session stream (the client keeps the same stream, the server counts one
// open); a server without the Session RPC (StepOnly, as servers before it)
// answers Unimplemented and the client steps over Step calls, with the
// same results. The wire bytes each step reports are the same on both
// paths, client and server side: each step is the same frames, each
// counted as its protobuf size plus gRPC's 5-byte prefix, whichever stream
// carries it (the tests against the model pin the absolute values).
func TestSessionStreamCarriesSteps(t *testing.T) {
	srv, addrs := startServer(t, server.ServerConfig{}, server.NewCPUEngine())
	old, oldAddrs := startServer(t, server.ServerConfig{StepOnly: true}, server.NewCPUEngine())

	c := dial(t, addrs["grpc"], "grpc", "")
	cfg, plan := testConfig(t, "test/single-tiny")
	s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := plan.Config.Workload.Batch
	if _, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(b, SeededPrompt(plan))}); err != nil {
		t.Fatal(err)
	}
	first := s.ss.st
	if first == nil {
		t.Fatal("no session stream after a step on a server with the Session RPC")
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Step(ctx(t), partition.Decode, i, []wire.Tensor{tokensTensor(b, make([]uint32, b))}); err != nil {
			t.Fatalf("decode %d: %v", i, err)
		}
	}
	if s.ss.st != first {
		t.Error("the session's steps went on more than one stream")
	}
	if n := srv.SessionStreams(); n != 1 {
		t.Errorf("server: %d open session streams, want 1", n)
	}
	if err := s.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() bool { return srv.SessionStreams() == 0 }, "the closed session's stream ended")

	srvBefore := srv.Bytes.Snapshot()
	_, streamed := statefulSteps(t, dial(t, addrs["grpc"], "grpc", ""))
	srvStream := diffSnap(srv.Bytes.Snapshot(), srvBefore)

	oc := dial(t, oldAddrs["grpc"], "grpc", "")
	_, called := statefulSteps(t, oc)
	if !oc.t.(*grpcTransport).stepOnly.Load() {
		t.Error("the client did not note that the server lacks the Session RPC")
	}
	if n := old.SessionStreams(); n != 0 {
		t.Errorf("a StepOnly server has %d open session streams", n)
	}
	// The reply's trailer carries the server's timings as varints, so
	// WireDown may differ between two runs by a few bytes; every other
	// count is the same frames on both paths.
	var sumStream, sumCalled commcount.TransferSnapshot
	for i := range streamed {
		a, b := streamed[i], called[i]
		a.WireDown, b.WireDown = 0, 0
		if a != b {
			t.Errorf("step %d: bytes on the session stream %+v, over Step calls %+v", i, streamed[i], called[i])
		}
		sumStream, sumCalled = addSnap(sumStream, streamed[i]), addSnap(sumCalled, called[i])
	}
	// What the client counted is what the server counted, to the byte.
	if sumStream != srvStream {
		t.Errorf("session stream: the client counted %+v, the server %+v", sumStream, srvStream)
	}
	if got := old.Bytes.Snapshot(); got != sumCalled {
		t.Errorf("Step calls: the client counted %+v, the server %+v", sumCalled, got)
	}
}

func addSnap(a, b commcount.TransferSnapshot) commcount.TransferSnapshot {
	return commcount.TransferSnapshot{PayloadUp: a.PayloadUp + b.PayloadUp, PayloadDown: a.PayloadDown + b.PayloadDown,
		WireUp: a.WireUp + b.WireUp, WireDown: a.WireDown + b.WireDown, MessagesUp: a.MessagesUp + b.MessagesUp, MessagesDown: a.MessagesDown + b.MessagesDown}
}

func diffSnap(a, b commcount.TransferSnapshot) commcount.TransferSnapshot {
	return commcount.TransferSnapshot{PayloadUp: a.PayloadUp - b.PayloadUp, PayloadDown: a.PayloadDown - b.PayloadDown,
		WireUp: a.WireUp - b.WireUp, WireDown: a.WireDown - b.WireDown, MessagesUp: a.MessagesUp - b.MessagesUp, MessagesDown: a.MessagesDown - b.MessagesDown}
}

// TestSessionStreamIdleReaped: an open session stream between steps is not
// a request in flight: the idle reaper frees its session after the idle
// timeout, which ends the stream; the next step says the session is gone.
func TestSessionStreamIdleReaped(t *testing.T) {
	const idle = 100 * time.Millisecond
	srv, addrs := startServer(t, server.ServerConfig{IdleTimeout: idle}, server.NewCPUEngine())
	s, _ := statefulSteps(t, dial(t, addrs["grpc"], "grpc", ""))
	// The server may already have reaped it (a busy machine can take
	// longer than the idle timeout to get here): the client's view says
	// the steps ended with the stream open.
	if s.ss.st == nil {
		t.Fatal("no open session stream after the steps")
	}
	waitFor(t, 5*time.Second, func() bool { return srv.Sessions() == 0 && srv.SessionStreams() == 0 }, "the idle session and its stream ended")
	if n := srv.Waiting(); n != 0 {
		t.Errorf("%d requests waiting on an idle server", n)
	}
	_, plan := testConfig(t, "test/single-tiny")
	b := plan.Config.Workload.Batch
	_, err := s.Step(ctx(t), partition.Decode, 3, []wire.Tensor{tokensTensor(b, make([]uint32, b))})
	if status.Code(err) != codes.NotFound {
		t.Errorf("a step after the session idled out: %v, want NotFound", err)
	}
}

// TestSessionStreamDrain: a drain does not wait for an idle session
// stream: Shutdown returns without forcing (a forced stop returns an error
// after the drain deadline of 20 s).
func TestSessionStreamDrain(t *testing.T) {
	srv, err := server.NewServer(server.ServerConfig{}, server.NewCPUEngine())
	if err != nil {
		t.Fatal(err)
	}
	a, err := srv.ListenGRPC("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	statefulSteps(t, dial(t, a.String(), "grpc", ""))
	if n := srv.SessionStreams(); n != 1 {
		t.Fatalf("%d session streams open before the drain, want 1", n)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Errorf("shutdown with an idle session stream: %v", err)
	}
	if n := srv.SessionStreams(); n != 0 {
		t.Errorf("%d session streams open after the drain", n)
	}
}

// TestSessionStreamLimit: one connection holds at most the server's
// MaxSessionStreams open session streams (3 here); a session beyond them is
// refused its stream (ResourceExhausted with the limit's trailer) and
// steps over Step calls, served all the same. With one slot and a queue of
// one, HTTP/2 allows 1 + 1 + 3 streams on the connection: the open session
// streams leave the Step calls their room (without it the fourth session's
// stream would wait for a stream until its deadline).
func TestSessionStreamLimit(t *testing.T) {
	const limit = 3
	srv, addrs := startServer(t, server.ServerConfig{MaxConcurrent: 1, MaxQueue: 1, MaxSessionStreams: limit}, server.NewCPUEngine())
	c := dial(t, addrs["grpc"], "grpc", "")
	var last *Session
	for i := 0; i <= limit; i++ {
		last, _ = statefulSteps(t, c)
	}
	if n := srv.SessionStreams(); n != limit {
		t.Errorf("%d session streams open, want the limit %d", n, limit)
	}
	// The refusal carried the limit's trailer: any other refusal would
	// have been statefulSteps' error (TestSessionStreamOtherRefusalIsError).
	if !last.ss.off || last.ss.st != nil {
		t.Errorf("session %d: stream off %v, want refused and stepping over Step calls", limit+1, last.ss.off)
	}
}

// TestSessionStreamConcurrentSteps: steps of one session at once (an
// engine that takes any request in any order) are all served: one goes on
// the session's stream, a step that finds it busy goes over a Step call;
// each gets a whole reply and the stream stays open.
func TestSessionStreamConcurrentSteps(t *testing.T) {
	const workers, steps = 3, 20
	_, addrs := startServer(t, server.ServerConfig{}, sinkEngine{})
	cfg, plan := testConfig(t, "test/single-tiny")
	s, err := dial(t, addrs["grpc"], "grpc", "").Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := plan.Config.Workload.Batch
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < steps; i++ {
				r, err := s.Step(ctx(t), partition.Decode, i, []wire.Tensor{tokensTensor(b, make([]uint32, b))})
				if err != nil {
					errs <- err
					return
				}
				// sinkEngine replies b token ids of 4 B.
				if len(r.Tensors) != 1 || len(r.Tensors[0].Data) != 4*b {
					errs <- fmt.Errorf("step %d: reply %d tensors, want one of %d B", i, len(r.Tensors), 4*b)
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if s.ss.st == nil {
		t.Error("the session's stream was closed by concurrent steps")
	}
}

// TestSessionStreamCloseDuringStep: Session.Close while a step is held
// inside the engine closes the session's stream at once: the step returns
// an error saying the session was closed under it (without the gate ever
// opening: before, the client's side of the stream stayed open and the
// step waited for the engine, here forever, up to its deadline), the
// server's end of the stream ends and the session is freed, and the
// client holds no stream afterwards.
func TestSessionStreamCloseDuringStep(t *testing.T) {
	g := newGateEngine(sinkEngine{})
	g.free = 1 // the first step opens the stream; the second is held
	srv, addrs := startServer(t, server.ServerConfig{}, g)
	cfg, plan := testConfig(t, "test/single-tiny")
	s, err := dial(t, addrs["grpc"], "grpc", "").Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := plan.Config.Workload.Batch
	in := []wire.Tensor{tokensTensor(b, make([]uint32, b))}
	if _, err := s.Step(ctx(t), partition.Decode, 0, in); err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Step(ctx(t), partition.Decode, 1, in)
		errc <- err
	}()
	g.waitStarted(t, 1)
	if err := s.Close(ctx(t)); err != nil {
		t.Fatalf("close with a step in flight: %v", err)
	}
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "closed by its client") {
			t.Errorf("the step in flight at Close: %v, want an error saying the session was closed under it", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the step in flight at Close had not returned 10 s later")
	}
	waitFor(t, 5*time.Second, func() bool { return srv.Sessions() == 0 && srv.SessionStreams() == 0 }, "the closed session and its stream ended on the server")
	if n := g.steps.Load(); n != 2 {
		t.Errorf("%d steps entered the engine, want 2", n)
	}
	s.ss.mu.Lock()
	st := s.ss.st
	s.ss.mu.Unlock()
	if st != nil {
		t.Error("the client still holds the closed session's stream")
	}
}

// TestSessionStreamOtherRefusalIsError: a Session stream refused with
// ResourceExhausted for anything but the per-connection stream limit is
// the step's error, not a quiet fallback to Step calls for the session's
// life. Here the refusal is the memory budget's: a budget of 1 KiB has no
// room for a connection's 512 KiB of buffers, so the tap refuses the first
// call of a new connection, the session's stream. (The limit's own
// refusal, which does fall back, is TestSessionStreamLimit's.)
func TestSessionStreamOtherRefusalIsError(t *testing.T) {
	_, addrs := startServer(t, server.ServerConfig{MemoryBudgetBytes: 1 << 10}, sinkEngine{})
	c := dial(t, addrs["grpc"], "grpc", "")
	_, plan := testConfig(t, "test/single-tiny")
	b := plan.Config.Workload.Batch
	s := &Session{c: c, ID: "0123456789abcdef", Mode: partition.RemoteStateful, maxChunk: wire.ChunkBytes(4 << 20), ss: &sessionStream{}}
	_, err := s.Step(ctx(t), partition.Decode, 0, []wire.Tensor{tokensTensor(b, make([]uint32, b))})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "memory budget") {
		t.Errorf("a step whose stream the memory budget refused: %v, want ResourceExhausted naming the memory budget", err)
	}
	if s.ss.off {
		t.Error("the client turned the session's stream off for a refusal that was not the stream limit")
	}
}

// TestSessionStreamBudget: an open session stream counts
// server.SessionStreamBytes against the memory budget. With a budget that
// holds the session and the connection's buffers but not the stream as
// well (beside the headroom kept for small requests, 1/16 of a budget
// under 16 MiB), the stream is refused as the limit refuses one and the
// session steps over Step calls; with that budget plus one stream's bytes
// it opens and counts them until it ends.
func TestSessionStreamBudget(t *testing.T) {
	// What a single-tiny stateful session and a connection hold, from a
	// server with room for everything.
	probe, addrs := startServer(t, server.ServerConfig{}, server.NewCPUEngine())
	cfg, _ := testConfig(t, "test/single-tiny")
	if _, err := dial(t, addrs["grpc"], "grpc", "").Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, conn := probe.ReservedBytes(), probe.ConnBytes()
	const stream = server.SessionStreamBytes
	headroom := func(b int64) int64 { return min(b/16, 1<<20) }
	// A budget whose part beyond the headroom ends half a stream above
	// the session and the connection.
	want := held + conn + stream/2
	budget := want * 16 / 15
	if budget >= 16<<20 {
		budget = want + 1<<20
	}
	if held+conn > budget || held+conn+stream <= budget-headroom(budget) {
		t.Fatalf("budget %d: session %d B + connection %d B must fit, and a stream's %d B more not (headroom %d B)", budget, held, conn, stream, headroom(budget))
	}
	srv, addrs := startServer(t, server.ServerConfig{MemoryBudgetBytes: budget}, server.NewCPUEngine())
	s, _ := statefulSteps(t, dial(t, addrs["grpc"], "grpc", ""))
	if !s.ss.off || srv.SessionStreams() != 0 {
		t.Errorf("budget %d B: stream off %v, %d open; want refused and stepping over Step calls", budget, s.ss.off, srv.SessionStreams())
	}
	if got := srv.ConnBytes(); got != conn {
		t.Errorf("budget %d B: connections and streams hold %d B, want the connection's %d B", budget, got, conn)
	}
	srv, addrs = startServer(t, server.ServerConfig{MemoryBudgetBytes: budget + stream}, server.NewCPUEngine())
	s, _ = statefulSteps(t, dial(t, addrs["grpc"], "grpc", ""))
	if s.ss.off || srv.SessionStreams() != 1 {
		t.Errorf("budget %d B: stream off %v, %d open; want one open", budget+stream, s.ss.off, srv.SessionStreams())
	}
	if got := srv.ConnBytes(); got != conn+stream {
		t.Errorf("budget %d B with a stream open: connections and streams hold %d B, want %d + %d", budget+stream, got, conn, stream)
	}
	if err := s.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for srv.ConnBytes() != conn && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.ConnBytes(); got != conn {
		t.Errorf("after the stream ended: %d B held, want the connection's %d B", got, conn)
	}
}

// The stream-limit refusal is told from any other ResourceExhausted by its
// trailer, or, from a server built before the trailer (whose refusal read
// "session stream: this connection has 16 open (max 16); step over Step
// calls"), by that message; a memory-budget refusal, with or without the
// old words elsewhere, and other codes are not.
func TestStreamLimitRefusal(t *testing.T) {
	limit := metadata.Pairs(wire.SessionStreamHeader, wire.SessionStreamLimited)
	for _, c := range []struct {
		name string
		err  error
		tl   metadata.MD
		want bool
	}{
		{"trailer", status.Error(codes.ResourceExhausted, "any words"), limit, true},
		{"server before the trailer", status.Error(codes.ResourceExhausted, "session stream: this connection has 16 open (max 16); step over Step calls"), nil, true},
		{"memory budget", status.Error(codes.ResourceExhausted, "session 0123: 2048 B over the memory budget of 1024 B"), nil, false},
		{"old words not at the start", status.Error(codes.ResourceExhausted, "memory budget: session stream: this connection has 3 open"), nil, false},
		{"another code with the trailer", status.Error(codes.Unavailable, "draining"), limit, false},
		{"another code with the old words", status.Error(codes.Internal, "session stream: this connection has 16 open (max 16)"), nil, false},
		{"another trailer value", status.Error(codes.ResourceExhausted, "x"), metadata.Pairs(wire.SessionStreamHeader, "1"), false},
	} {
		if got := streamLimitRefusal(c.err, c.tl); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
	// The server's refusal still begins with the words servers before the
	// trailer used, so either kind of client falls back on it.
	if wire.SessionStreamLimitedBefore != "session stream: this connection has " {
		t.Errorf("the limit refusal begins %q, not the words servers before the trailer used", wire.SessionStreamLimitedBefore)
	}
}
