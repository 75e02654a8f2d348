package remote

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// TestTCPPollKeepsBounds: with both ends' raw-TCP reads spinning (always,
// a second: the longest spin allowed), steps give the tokens, a step held
// in the engine still ends at its context's deadline with the error a
// sleeping read gives (the connection's i/o timeout, which errors.Is
// finds to be context.DeadlineExceeded), and a client that
// hangs up still frees its session. (PARTBENCH_TCP_POLL=always over the
// package's tests runs the rest of the raw-TCP bounds with spinning reads.)
func TestTCPPollKeepsBounds(t *testing.T) {
	const poll = "always:1s"
	g := newGateEngine(&server.ArithEngine{})
	g.free = 3 // three steps run, the fourth waits for a gate never opened
	srv, addrs := startServer(t, server.ServerConfig{Poll: poll}, g)
	if p := srv.PollPolicy(); !strings.HasPrefix(p.String(), "always, 1s (server: Poll)") {
		t.Errorf("server's policy: %v", p)
	}
	cfg, plan := testConfig(t, "test/single-tiny")
	c, err := Dial(ctx(t), ClientConfig{Addr: addrs["tcp"], Transport: "tcp", Poll: poll, CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.PollPolicy(); !strings.HasPrefix(p, "always, 1s (client: Poll)") {
		t.Errorf("client's policy: %q", p)
	}
	s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, SeededPrompt(s.Plan)[:plan.Config.Workload.Batch])}
	if _, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(4, SeededPrompt(s.Plan))}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := s.Step(ctx(t), partition.Decode, i, in); err != nil {
			t.Fatalf("decode step %d: %v", i, err)
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Step(dctx, partition.Decode, 2, in); err == nil || !strings.Contains(err.Error(), "i/o timeout") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a step held past its context's deadline while the client spun: %v, want the connection's i/o timeout, as context.DeadlineExceeded", err)
	}
	close(g.open) // the held step ends; its session can be freed
	c.Close()
	waitFor(t, 5*time.Second, func() bool { return srv.Sessions() == 0 }, "session freed after the spinning client hung up")
}

// TestMeasureNotesPoll: `partbench remote` over raw TCP says in its
// results' notes how the client's reads waited (here the variable's
// value); over gRPC, which does not poll, it says nothing of it.
func TestMeasureNotesPoll(t *testing.T) {
	t.Setenv(wire.PollEnv, "adaptive:20us")
	_, addrs := startServer(t, server.ServerConfig{}, &server.ArithEngine{})
	for _, tr := range transports {
		o := MeasureOptions{Config: "test/single-tiny", Mode: "stateful", Link: "loopback", Out: t.TempDir(), Trials: 1,
			Conn: ConnectOptions{Server: addrs[tr], Transport: tr}}
		_, rf, err := Measure(ctx(t), o, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tr, err)
		}
		notes := strings.Join(rf.Notes, "\n")
		want := "client: raw-TCP reads poll before sleeping: adaptive, 20µs (PARTBENCH_TCP_POLL)"
		if got := strings.Contains(notes, want); got != (tr == "tcp") {
			t.Errorf("%s: notes %q; the raw-TCP poll note %q there: %v, want %v", tr, notes, want, got, tr == "tcp")
		}
	}
}
