package remote

import (
	"slices"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// Three tiny configs: single-tiny (gated MLP, 8 layers), layermap-tiny run
// on one rank (plain MLP, 4 layers) and gpt2-tiny (the GPT-2 architecture:
// biases, LayerNorm, learned positions, tied LM head).
var engineConfigs = []string{"test/single-tiny", "test/layermap-tiny", "test/gpt2-tiny"}

// TestExecEngineModesAgree runs one generation per mode through a real
// server over the CPU backend: every mode's tokens are the local mode's, and
// every request's payload bytes are partition.RemoteBytesOf's.
func TestExecEngineModesAgree(t *testing.T) {
	for _, name := range engineConfigs {
		for _, tr := range transports {
			t.Run(name+"/"+tr, func(t *testing.T) {
				cfg, plan := testConfig(t, name)
				eng := server.NewCPUEngine()
				_, addrs := startServer(t, server.ServerConfig{}, eng)
				prompt := SeededPrompt(plan)
				local, err := GenerateLocal(ctx(t), eng, plan, prompt)
				if err != nil {
					t.Fatal(err)
				}
				if len(local.Tokens) != plan.Config.Workload.OutputTokens {
					t.Fatalf("local made %d token sets, want output_tokens = %d", len(local.Tokens), plan.Config.Workload.OutputTokens)
				}
				weights, err := wire.ModelWeights(plan)
				if err != nil {
					t.Fatal(err)
				}
				c := dial(t, addrs[tr], tr, "")
				for _, mode := range []partition.RemoteMode{partition.RemoteNaive, partition.RemoteKV, partition.RemoteStateful} {
					s, err := c.Open(ctx(t), cfg, mode, partition.RemoteOptions{})
					if err != nil {
						t.Fatal(err)
					}
					g, err := Generate(ctx(t), s, weights, prompt)
					if err != nil {
						t.Fatalf("%s: %v", mode, err)
					}
					if !slices.EqualFunc(g.Tokens, local.Tokens, slices.Equal) {
						t.Errorf("%s tokens %v, local %v", mode, g.Tokens, local.Tokens)
					}
					for _, call := range g.Calls {
						want, err := plan.RemoteBytesOf(mode, partition.RemoteRequest{Phase: call.Phase, Step: call.Step}, partition.RemoteOptions{})
						if err != nil {
							t.Fatal(err)
						}
						b := call.Result.Bytes
						if b.PayloadUp != want.Up() || b.PayloadDown != want.Down() {
							t.Errorf("%s %s step %d: payload up %d down %d, the model says %d and %d",
								mode, call.Phase, call.Step, b.PayloadUp, b.PayloadDown, want.Up(), want.Down())
						}
					}
					s.Close(ctx(t))
				}
			})
		}
	}
}

// TestExecEngineUsesShippedState: a naive session computes with the weights
// the request carries, so weights of another seed give other tokens, and a
// corrupted KV cache changes the next step's tokens.
func TestExecEngineUsesShippedState(t *testing.T) {
	cfg, plan := testConfig(t, "test/single-tiny")
	_, addrs := startServer(t, server.ServerConfig{}, server.NewCPUEngine())
	prompt := SeededPrompt(plan)
	weights, err := wire.ModelWeights(plan)
	if err != nil {
		t.Fatal(err)
	}
	other := *cfg
	other.Run.Seed++
	oplan, err := partition.NewPlan(&other)
	if err != nil {
		t.Fatal(err)
	}
	otherWeights, err := wire.ModelWeights(oplan)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addrs["grpc"], "grpc", "")
	run := func(ws []wire.Tensor) [][]uint32 {
		s, err := c.Open(ctx(t), cfg, partition.RemoteNaive, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx(t))
		g, err := Generate(ctx(t), s, ws, prompt)
		if err != nil {
			t.Fatal(err)
		}
		return g.Tokens
	}
	a, b := run(weights), run(otherWeights)
	if slices.EqualFunc(a, b, slices.Equal) {
		t.Errorf("weights of seeds %d and %d gave the same tokens %v: the server did not use the shipped weights", cfg.Run.Seed, other.Run.Seed, a)
	}
	// Same weights again: the stateless server gives the first answer back.
	if c := run(weights); !slices.EqualFunc(a, c, slices.Equal) {
		t.Errorf("a second naive session gave %v, the first %v", c, a)
	}
}

// TestExecEngineKVTravels: a kv session reads the cache the request carries,
// not one it kept: decode step 0 with the prefill's returned cache gives the
// generation's tokens, with that cache zeroed other tokens.
func TestExecEngineKVTravels(t *testing.T) {
	cfg, plan := testConfig(t, "test/single-tiny")
	_, addrs := startServer(t, server.ServerConfig{}, server.NewCPUEngine())
	prompt := SeededPrompt(plan)
	weights, err := wire.ModelWeights(plan)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addrs["tcp"], "tcp", "")
	s, err := c.Open(ctx(t), cfg, partition.RemoteKV, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx(t), wire.PhaseLoad, 0, weights); err != nil {
		t.Fatal(err)
	}
	pre, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, prompt)})
	if err != nil {
		t.Fatal(err)
	}
	first, err := tokensOf(pre.Tensors)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(zero bool) []uint32 {
		var in []wire.Tensor
		for _, kv := range pre.Tensors {
			if kv.Name == partition.RemoteTokensOut {
				continue
			}
			if zero {
				kv.Data = make([]byte, len(kv.Data))
			}
			in = append(in, kv)
		}
		in = append(in, tokensTensor(plan.Config.Workload.Batch, first))
		r, err := s.Step(ctx(t), partition.Decode, 0, in)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tokensOf(r.Tensors)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	good, zeroed := decode(false), decode(true)
	if again := decode(false); !slices.Equal(good, again) {
		t.Errorf("the same request gave %v, then %v", good, again)
	}
	if slices.Equal(good, zeroed) {
		t.Errorf("a zeroed KV cache gave the same tokens %v: the server did not read the shipped cache", good)
	}
	t.Logf("prefill tokens %v, decode %v, with a zeroed cache %v", first, good, zeroed)
}
