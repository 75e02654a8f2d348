//go:build cgo

package remote

import (
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	pexec "github.com/partbench/partbench/exec"
	xcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// TestExecEngineOnFakeCUDA: the exec engine over exec/cuda, on the fake
// driver (device memory is host memory, kernels compute nothing), takes
// every mode's payload — weights, KV caches, prompts, token ids — through
// exec.StateIO with the model's bytes exactly, and, the arithmetic being
// absent, the modes still agree: each returns what the device's memory
// holds. It proves the plumbing only; it has not run on a GPU.
func TestExecEngineOnFakeCUDA(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	eng := &server.ExecEngine{Backend: "cuda", New: func(plan *partition.Plan) (pexec.Compute, error) { return xcuda.New(plan, 0, xcuda.Options{}) }}
	for _, name := range []string{"test/single-tiny", "test/gpt2-tiny"} {
		cfg, plan := testConfig(t, name)
		_, addrs := startServer(t, server.ServerConfig{}, eng)
		prompt := SeededPrompt(plan)
		local, err := GenerateLocal(ctx(t), eng, plan, prompt)
		if err != nil {
			t.Fatalf("%s local: %v", name, err)
		}
		weights, err := wire.ModelWeights(plan)
		if err != nil {
			t.Fatal(err)
		}
		c := dial(t, addrs["tcp"], "tcp", "")
		for _, mode := range []partition.RemoteMode{partition.RemoteNaive, partition.RemoteKV, partition.RemoteStateful} {
			s, err := c.Open(ctx(t), cfg, mode, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := Generate(ctx(t), s, weights, prompt)
			if err != nil {
				t.Fatalf("%s %s: %v", name, mode, err)
			}
			if !slices.EqualFunc(g.Tokens, local.Tokens, slices.Equal) {
				t.Errorf("%s %s tokens %v, local %v", name, mode, g.Tokens, local.Tokens)
			}
			for _, call := range g.Calls {
				want, _ := plan.RemoteBytesOf(mode, partition.RemoteRequest{Phase: call.Phase, Step: call.Step}, partition.RemoteOptions{})
				if b := call.Result.Bytes; b.PayloadUp != want.Up() || b.PayloadDown != want.Down() {
					t.Errorf("%s %s %s/%d: payload %d up %d down, the model says %d and %d", name, mode, call.Phase, call.Step, b.PayloadUp, b.PayloadDown, want.Up(), want.Down())
				}
			}
			s.Close(ctx(t))
		}
	}
}

// TestBackendEngineCUDAWithoutNCCL: `serve --backend cuda` serves one-rank
// plans, so it loads no NCCL: with the fake driver and NCCL pointed at a
// file that does not exist, the engine is made and a stateful session
// generates through the server; without a driver the refusal names it.
func TestBackendEngineCUDAWithoutNCCL(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv("PARTBENCH_NCCL_LIB", t.TempDir()+"/libnccl.so.2")
	eng, err := server.BackendEngine("cuda")
	if err != nil {
		t.Fatalf("server.BackendEngine(cuda) without NCCL: %v", err)
	}
	if eng.Backend != "cuda" {
		t.Errorf("engine backend %q, want cuda", eng.Backend)
	}
	cfg, plan := testConfig(t, "test/single-tiny")
	_, addrs := startServer(t, server.ServerConfig{}, eng)
	s, err := dial(t, addrs["tcp"], "tcp", "").Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx(t))
	weights, err := wire.ModelWeights(plan)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Generate(ctx(t), s, weights, SeededPrompt(plan))
	if err != nil {
		t.Fatalf("generate on the fake GPU without NCCL: %v", err)
	}
	if want := plan.Config.Workload.Batch; len(g.Tokens) != want {
		t.Errorf("%d sequences generated, want the workload's batch %d", len(g.Tokens), want)
	}

	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/libcuda.so.1")
	if _, err := server.BackendEngine("cuda"); err == nil || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Errorf("server.BackendEngine(cuda) without a driver: %v", err)
	}
}
