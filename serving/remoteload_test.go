package serving

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/remote"
	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/server"
)

// hostEngine starts the tiny model's batched engine (slots sequences of
// context tokens) behind a partbench serve server on both transports
// (port 0) and returns the engine and the addresses.
func hostEngine(t *testing.T, ex Executor, cfg Config, maxContext int) (*EngineServer, map[string]string) {
	t.Helper()
	srv, err := NewEngineServer(cfg, ex, maxContext)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context_(t)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	s, err := server.NewServer(server.ServerConfig{Generator: srv}, &server.ArithEngine{})
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
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		s.Shutdown(sctx)
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return srv, map[string]string{"grpc": ga.String(), "tcp": ta.String()}
}

// waitStats polls the engine's state until cond holds (30 s at most).
func waitStats(t *testing.T, srv *EngineServer, cond func(EngineStats) bool) EngineStats {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := srv.Stats()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine state %+v: not reached within 30 s", st)
		}
		time.Sleep(time.Millisecond)
	}
}

func context_(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 60*time.Second)
}

func dialGenerate(t *testing.T, addr, transport string) *remote.GenerateClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remote.DialGenerate(ctx, remote.ClientConfig{Addr: addr, Transport: transport, CallTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The load generator over partbench serve's own transports, against the
// batched engine: 24 tiny requests at 20,000 req/s (all 24 within about
// a millisecond, so that they overlap in the engine however fast it runs
// its iterations: at 400 req/s an idle engine finished each request
// before the next arrived and batched none) and one too long for a
// slot, on gRPC and on raw TCP. Accounting: every request is completed or
// failed (the long one, with the server's reason), every completed one
// streamed exactly its output tokens, one gap per token after the first;
// Little's law holds on the measured timeline; and the engine ran fewer
// iterations than the tokens it made (they were batched).
func TestLoadRemoteBothTransports(t *testing.T) {
	for _, tr := range []string{"grpc", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			_, ex := tinyEngine(t, 4, 24)
			cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 4, MaxNumBatchedTokens: 16, BlockSize: 1, NumBlocks: 4 * 24},
				Replicas: 1, Router: RouterRoundRobin}
			srv, addrs := hostEngine(t, ex, cfg, 24)
			reqs := mustGenerate(t, Spec{NumPrompts: 24, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: 20000},
				Lengths: Lengths{InputLen: 10, OutputLen: 5, RangeRatio: 0.5}, Seed: 3})
			long := len(reqs)
			reqs = append(reqs, Request{ID: long, ArrivalS: reqs[long-1].ArrivalS, InputLen: 20, OutputLen: 10})
			ctx, cancel := context_(t)
			defer cancel()
			res, err := LoadRemote(ctx, reqs, RemoteTarget{Client: dialGenerate(t, addrs[tr], tr)}, 0)
			if err != nil {
				t.Fatal(err)
			}
			m := Summarize(res, []float64{99}, Goodput{})
			if m.Completed != long || m.Failed != 1 || !strings.Contains(res.Requests[long].Error, "--engine-context") {
				t.Fatalf("%d completed, %d failed; the long one: %q", m.Completed, m.Failed, res.Requests[long].Error)
			}
			res.Requests = res.Requests[:long]
			m = checkRun(t, res)
			out, gaps := 0, 0.0
			for _, r := range reqs[:long] {
				out += r.OutputLen
			}
			for _, w := range res.ITL.Weight {
				gaps += w
			}
			if m.TotalOutputTokens != out || int(gaps) != out-long {
				t.Errorf("%d output tokens (want %d), %g gaps (want %d)", m.TotalOutputTokens, out, gaps, out-long)
			}
			// The engine publishes its state after the iteration whose
			// tokens it sent: wait for it to be idle.
			st := waitStats(t, srv, func(st EngineStats) bool { return st.Running+st.Waiting == 0 })
			if st.Iterations == 0 || st.Iterations >= int64(out) || st.FreeBlocks != st.NumBlocks || st.FreeSlots != st.Slots {
				t.Errorf("engine after the run: %+v (want fewer iterations than %d tokens, every block and slot free)", st, out)
			}
		})
	}
}

// gated runs the engine's first iteration freely, then one iteration per
// value received from gate.
type gated struct {
	*PassExecutor
	gate chan struct{}
	n    int
}

func (g *gated) Run(ctx context.Context, batch []Scheduled) error {
	if g.n++; g.n > 1 {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.PassExecutor.Run(ctx, batch)
}

// A client that goes away mid-stream frees its sequence's KV blocks and
// slot: on each transport a request of 8 + 180 tokens (blocks of 4) is cut off after its
// first token; the engine then runs an iteration only every 20 ms, so it
// notices the departure long before it could finish the request, and
// every block and slot comes back, the request counted as aborted.
func TestDisconnectFreesKVBlocks(t *testing.T) {
	for _, tr := range []string{"grpc", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			_, ex := tinyEngineMode(t, 2, 200, false)
			g := &gated{PassExecutor: ex, gate: make(chan struct{})}
			cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 2, MaxNumBatchedTokens: 16, BlockSize: 4, NumBlocks: 100},
				Replicas: 1, Router: RouterRoundRobin}
			srv, addrs := hostEngine(t, g, cfg, 200)
			c := dialGenerate(t, addrs[tr], tr)
			ctx, cancel := context.WithCancel(context.Background())
			first := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- c.Generate(ctx, &pb.GenerateRequest{PromptLen: 8, MaxTokens: 180}, func(tk *pb.GenerateToken) {
					if tk.Index == 0 {
						close(first)
					}
				})
			}()
			select {
			case <-first:
			case err := <-done:
				t.Fatalf("no first token: %v", err)
			}
			// The engine publishes its state right after the iteration
			// that made the first token (the next waits at the gate).
			st := waitStats(t, srv, func(st EngineStats) bool { return st.Iterations >= 1 })
			held := st.NumBlocks - st.FreeBlocks
			cancel()
			if err := <-done; err == nil {
				t.Fatal("a cancelled call returned nil")
			}
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(30 * time.Second)
			for st := srv.Stats(); st.Aborted == 0; st = srv.Stats() {
				select {
				case <-tick.C:
					select {
					case g.gate <- struct{}{}:
					default:
					}
				case <-deadline:
					t.Fatalf("not aborted within 30 s: %+v", st)
				}
			}
			st = srv.Stats()
			if held != 2 || st.FreeBlocks != st.NumBlocks || st.FreeSlots != st.Slots || st.Running+st.Waiting != 0 || st.Iterations >= 180 {
				t.Errorf("%d blocks held after the first token (want the prompt's ⌈8/4⌉ = 2); after the abort: %+v", held, st)
			}
		})
	}
}
