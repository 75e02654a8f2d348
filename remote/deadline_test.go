package remote

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// TestServerCallTimeout: the server's CallTimeout ends a call that runs
// past it (here a step held in the engine), never before it, and a
// connection idle for longer than it between calls still serves the next
// call (the raw-TCP server keeps the last call's deadline armed while it
// waits, and must clear it rather than hang up when it passes).
func TestServerCallTimeout(t *testing.T) {
	const callTimeout = 500 * time.Millisecond
	g := newGateEngine(sinkEngine{})
	g.free = 2 // two steps run, the third waits for a gate never opened
	_, addrs := startServer(t, server.ServerConfig{CallTimeout: callTimeout}, g)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			g.steps.Store(0)
			cfg, plan := testConfig(t, "test/single-tiny")
			c := dial(t, addrs[tr], tr, "")
			s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			in := []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, make([]uint32, plan.Config.Workload.Batch))}
			if _, err := s.Step(ctx(t), partition.Decode, 0, in); err != nil {
				t.Fatal(err)
			}
			// Idle for twice the call timeout (past its slack of 1/16).
			time.Sleep(2 * callTimeout)
			if _, err := s.Step(ctx(t), partition.Decode, 1, in); err != nil {
				t.Fatalf("a step after the connection idled %v (call timeout %v): %v", 2*callTimeout, callTimeout, err)
			}
			t0 := time.Now()
			_, err = s.Step(ctx(t), partition.Decode, 2, in)
			took := time.Since(t0)
			if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
				t.Fatalf("a step held past the server's call timeout: %v, want the engine's context deadline exceeded", err)
			}
			if took < callTimeout {
				t.Errorf("the held step ended after %v, before the call timeout of %v", took, callTimeout)
			}
		})
	}
}

// TestClientDeadlineOutlivesCallTimeout: a call whose context has a
// deadline of its own runs until that deadline even when it is later than
// the client's CallTimeout, after calls without one (the raw-TCP client
// keeps their CallTimeout armed on the connection, and must not let it end
// this call early); a call without a deadline is still bounded by it.
func TestClientDeadlineOutlivesCallTimeout(t *testing.T) {
	const callTimeout = 500 * time.Millisecond
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			g := newGateEngine(sinkEngine{})
			g.free = 1
			_, addrs := startServer(t, server.ServerConfig{}, g)
			cfg, plan := testConfig(t, "test/single-tiny")
			c, err := Dial(ctx(t), ClientConfig{Addr: addrs[tr], Transport: tr, CallTimeout: callTimeout})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			in := []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, make([]uint32, plan.Config.Workload.Batch))}
			if _, err := s.Step(context.Background(), partition.Decode, 0, in); err != nil {
				t.Fatal(err)
			}
			// Held in the engine for 3 call timeouts, inside its own 20 s.
			time.AfterFunc(3*callTimeout, func() { close(g.open) })
			t0 := time.Now()
			if _, err := s.Step(ctx(t), partition.Decode, 1, in); err != nil {
				t.Fatalf("a step with a deadline of its own, held %v (the client's call timeout %v): %v after %v", 3*callTimeout, callTimeout, err, time.Since(t0))
			}
		})
	}
}
