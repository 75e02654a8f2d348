package resume

import (
	"context"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/server"
)

func tinyPlan(t *testing.T) (*configs.Config, *partition.Plan) {
	t.Helper()
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, plan
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// statefulSession starts an in-process server on a loopback port chosen by
// the kernel and opens a stateful session with logits over transport.
func statefulSession(t *testing.T, cfg *configs.Config, transport string) (*remote.Session, string) {
	t.Helper()
	srv, err := server.NewServer(server.ServerConfig{}, server.NewCPUEngine())
	if err != nil {
		t.Fatal(err)
	}
	listen := srv.ListenGRPC
	if transport == "tcp" {
		listen = srv.ListenTCP
	}
	addr, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	c, err := remote.Dial(testCtx(t), remote.ClientConfig{Addr: addr.String(), Transport: transport})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := c.Open(testCtx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	return s, addr.String()
}

// TestResumeEqualsUninterrupted: for every strategy and pause layer, the
// resumed output is bit-identical to the uninterrupted forward with the same
// modification (the CPU backend runs the same float32 ops in the same
// order), and the modification changes the output (so the check can fail).
// Counts, derived from single-tiny (8 layers, hidden 64, batch 4, prompt
// 24 − 4 = 20 tokens, tp = 1):
//   - recompute replays 10 ops per layer (attn_norm, wqkv, attn, wo,
//     attn_residual, mlp_norm, w_up, act, w_down, mlp_residual): 10·N;
//   - offload moves x each way: 4 × 20 rows × 64 × 4 B = 20,480 B;
//   - stateful sends the modification only: 64 × 4 B = 256 B (0 without).
func TestResumeEqualsUninterrupted(t *testing.T) {
	cfg, plan := tinyPlan(t)
	c, err := cpu.New(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := NewLocal(plan, c)
	if err != nil {
		t.Fatal(err)
	}
	delta := Perturb(11, plan.Model.Hidden, 0.5)
	for _, tr := range []string{"grpc", "tcp"} {
		s, _ := statefulSession(t, cfg, tr)
		for _, layer := range []int{1, 4, 8} {
			for _, d := range [][]float32{nil, delta} {
				ctx := testCtx(t)
				want, err := l.Reference(ctx, layer, d)
				if err != nil {
					t.Fatal(err)
				}
				other, err := l.Reference(ctx, layer, Perturb(12, plan.Model.Hidden, 0.5))
				if err != nil {
					t.Fatal(err)
				}
				if want.Equal(other) {
					t.Fatalf("layer %d: two different modifications give the same output; the check could not fail", layer)
				}
				var outs []*Outcome
				for _, st := range []string{partition.ResumeRecompute, partition.ResumeOffload} {
					o, err := l.PauseResume(ctx, st, layer, d)
					if err != nil {
						t.Fatalf("%s layer %d: %v", st, layer, err)
					}
					outs = append(outs, o)
				}
				o, err := Stateful(ctx, s, layer, d)
				if err != nil {
					t.Fatalf("stateful/%s layer %d: %v", tr, layer, err)
				}
				outs = append(outs, o)
				for _, o := range outs {
					if !o.Output.Equal(want) {
						t.Errorf("%s (%s) layer %d modified %v: output differs from the uninterrupted forward (sampled %v, want %v)",
							o.Strategy, tr, layer, d != nil, o.Output.Sampled, want.Sampled)
					}
				}
				if got := outs[0].ReplayedLayerOps; got != 10*layer {
					t.Errorf("recompute at layer %d replayed %d layer ops, want 10·%d", layer, got, layer)
				}
				if outs[1].ToHostBytes != 20480 || outs[1].ToDeviceBytes != 20480 {
					t.Errorf("offload at layer %d moved %d B to host and %d B back, want 20480 each", layer, outs[1].ToHostBytes, outs[1].ToDeviceBytes)
				}
				wantUp := int64(0)
				if d != nil {
					wantUp = 256
				}
				if outs[2].NetUpBytes != wantUp {
					t.Errorf("stateful at layer %d sent %d B, want %d (the modification)", layer, outs[2].NetUpBytes, wantUp)
				}
				// The reply: logits of 4 sequences × the padded vocabulary × 4 B.
				if want := int64(4 * plan.VocabPadded * 4); outs[2].NetDownBytes != want {
					t.Errorf("stateful reply %d B, want %d", outs[2].NetDownBytes, want)
				}
			}
		}
	}
}

// TestResumeErrors: a resume without a matching pause, a layer out of
// range and a wrong-sized modification are refused with the reason.
func TestResumeErrors(t *testing.T) {
	cfg, plan := tinyPlan(t)
	s, _ := statefulSession(t, cfg, "grpc")
	ctx := testCtx(t)
	if _, err := s.Resume(ctx, 3, nil); err == nil {
		t.Error("resume without a pause succeeded")
	}
	if _, err := s.Pause(ctx, 9, Prompt(plan)); err == nil {
		t.Error("pause at layer 9 of 8 succeeded")
	}
	if _, err := s.Pause(ctx, 3, Prompt(plan)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resume(ctx, 4, nil); err == nil {
		t.Error("resume at layer 4 of a pass paused at 3 succeeded")
	}
	if _, err := s.Resume(ctx, 3, make([]float32, 3)); err == nil {
		t.Error("a 3-element modification of a 64-wide state was accepted")
	}
	c, err := cpu.New(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := NewLocal(plan, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.PauseResume(ctx, partition.ResumeRecompute, 0, nil); err == nil {
		t.Error("pause at layer 0 succeeded")
	}
	if _, err := l.PauseResume(ctx, "teleport", 2, nil); err == nil {
		t.Error("unknown strategy accepted")
	}
}

// TestRun: a whole measurement on single-tiny: every row's outputs match
// the reference, rows come in layer × strategy order, and the stateful row
// carries its decomposition.
func TestRun(t *testing.T) {
	cfg, plan := tinyPlan(t)
	c, err := cpu.New(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := NewLocal(plan, c)
	if err != nil {
		t.Fatal(err)
	}
	s, addr := statefulSession(t, cfg, "grpc")
	res, err := Run(testCtx(t), plan, Options{Layers: []int{2, 6}, Strategies: partition.ResumeStrategies, Trials: 2, Warmup: 1,
		Delta: Perturb(1, 64, 0.1), Local: l, Session: s, Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mismatches() != 0 || len(res.Results) != 6 || res.RawTCPRTT == nil {
		t.Fatalf("result %+v", res)
	}
	for i, row := range res.Results {
		if want := partition.ResumeStrategies[i%3]; row.Strategy != want || row.Layer != []int{2, 6}[i/3] {
			t.Errorf("row %d is %s at %d", i, row.Strategy, row.Layer)
		}
		if row.ResumeLatency.N != 2 || row.ResumeLatency.Mean <= 0 || row.TimeToOutput.Mean < row.ResumeLatency.Mean {
			t.Errorf("row %d timings %+v %+v", i, row.ResumeLatency, row.TimeToOutput)
		}
		if (row.Strategy == partition.ResumeStateful) != (row.Framework != nil) {
			t.Errorf("row %d: decomposition present %v", i, row.Framework != nil)
		}
	}
}
