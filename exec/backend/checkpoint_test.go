//go:build cgo

package backend

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/ncclcomm/nccltest"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// The registry's part of the Hugging Face workflow: the element types
// each backend computes in, the tolerances of docs/numerics.md, and the
// libraries each place needs (the CUDA driver in one process; NCCL as
// well for launched ranks), refused before anything is read.
func TestCheckpointBackends(t *testing.T) {
	single := launch.Env{Size: 1, LocalSize: 1, Source: launch.SourceSingle}
	launched := launch.Env{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Source: launch.SourceRankEnv}
	if b, err := cpuCheckpoint(CheckpointOptions{}, single); err != nil || b.DType != "fp32" || b.Tolerance != 1e-4 || b.ReferenceTolerance != 1e-4 || b.NewComm == nil {
		t.Errorf("cpu: %+v, %v", b, err)
	}
	if _, err := cpuCheckpoint(CheckpointOptions{DType: "bf16"}, single); err == nil || !strings.Contains(err.Error(), `--dtype "bf16"`) {
		t.Errorf("cpu bf16: %v", err)
	}
	if _, err := cpuCheckpoint(CheckpointOptions{HostWindowBytes: 1 << 20}, single); err == nil || !strings.Contains(err.Error(), "--host-window 1048576: only with --backend cuda") {
		t.Errorf("cpu with a host window: %v", err)
	}
	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/libcuda.so.1")
	if _, err := cudaCheckpoint(CheckpointOptions{DType: "fp16"}, single); err == nil || !strings.Contains(err.Error(), "cannot run here") || !strings.Contains(err.Error(), "PARTBENCH_CUDA_LIB") {
		t.Errorf("cuda without a driver: %v", err)
	}
	cudatest.Build(t).Setenv(t)
	if _, err := cudaCheckpoint(CheckpointOptions{DType: "fp8"}, single); err == nil || !strings.Contains(err.Error(), `--dtype "fp8": the GPU backend computes in fp32, fp16 or bf16`) {
		t.Errorf("cuda fp8: %v", err)
	}
	if _, err := cudaCheckpoint(CheckpointOptions{HostWindowBytes: -1}, single); err == nil || !strings.Contains(err.Error(), "--host-window -1: must be positive") {
		t.Errorf("cuda with a negative host window: %v", err)
	}
	// cuda.Tolerance and cuda.ReferenceTolerance: docs/numerics.md's table.
	for dt, want := range map[string][2]float64{"": {1e-4, 1e-3}, "fp32": {1e-4, 1e-3}, "fp16": {2e-2, 2e-2}, "bf16": {1e-1, 1e-1}} {
		b, err := cudaCheckpoint(CheckpointOptions{DType: dt}, single)
		if err != nil {
			t.Fatal(err)
		}
		wantDT := dt
		if wantDT == "" {
			wantDT = "fp32"
		}
		if b.Name != "cuda" || b.DType != wantDT || b.LaunchedDType != wantDT || b.Tolerance != want[0] || b.ReferenceTolerance != want[1] || b.NewComm != nil {
			t.Errorf("cuda %q: %+v", dt, b)
		}
	}
	t.Setenv("PARTBENCH_NCCL_LIB", t.TempDir()+"/libnccl.so.2")
	if _, err := cudaCheckpoint(CheckpointOptions{DType: "fp16"}, launched); err == nil || !strings.Contains(err.Error(), "NCCL") {
		t.Errorf("launched cuda without NCCL: %v", err)
	}
	nccltest.Setenv(t)
	if b, err := cudaCheckpoint(CheckpointOptions{DType: "fp16"}, launched); err != nil || b.NewComm == nil {
		t.Errorf("launched cuda with NCCL: %v", err)
	}
}

// A launched generation on the fakes: the two ranks of llama-tiny at tp2
// in fp16 as goroutines, each its own process's rank (rendezvous, NCCL
// communicators on each rank's Compute), each reading its slices. The plan
// is in fp16 there (hf.Backend.LaunchedDType), so the bytes NCCL counts
// equal the Program's; rank 0 returns the result, rank 1 nil. The fake
// kernels compute nothing: the ids are not checked, only their shape.
func TestCheckpointLaunchedOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	nccltest.Setenv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := checkpointtest.Dir(t, "llama-tiny")
	m, err := hf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prompts := [][]int{{1, 2, 3, 4}, {5, 6, 7, 8}}
	results := make([]*pexec.GenerateResult, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		env := launch.Env{Rank: r, Size: 2, LocalRank: r, LocalSize: 2, Source: launch.SourceRankEnv, RendezvousAddr: addr}
		b, err := cudaCheckpoint(CheckpointOptions{DType: "fp16"}, env)
		if err != nil {
			t.Fatal(err)
		}
		g := hf.Generation{Dir: dir, Prompts: prompts, NewTokens: 3, TP: 2, PP: 1, Microbatches: 1, Env: env, JoinTimeout: 20 * time.Second}
		cfg, err := g.Config()
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { results[r], errs[r] = m.Generate(ctx, cfg, g, b) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if results[1] != nil {
		t.Errorf("rank 1 returned a result")
	}
	res := results[0]
	if res == nil || len(res.GreedyIDs) != 2 || len(res.GreedyIDs[0]) != 3 || !strings.Contains(res.Plan, "TP=2") {
		t.Fatalf("rank 0: %+v", res)
	}
}

// prefetchCount is a checkpoint Source that counts the host-weights load's
// Prefetch calls (its windows) and passes them on.
type prefetchCount struct {
	model.Source
	windows int
}

func (p *prefetchCount) Prefetch(list []partition.TensorShard) error {
	p.windows++
	return p.Source.(interface {
		Prefetch([]partition.TensorShard) error
	}).Prefetch(list)
}

// The GPU backend's host window reaches the load (on the fakes). Rank 0 of
// llama-tiny at TP 1 holds all its weights in float32: per layer q and o
// 64×64, k and v 64×32, gate, up and down 64×176, two norms of 64 (46,208
// elements); two layers, embedding and LM head 512×64 each, the final norm
// 64: 158,016 elements, 632,064 bytes (617 KiB; the file is 634,216 bytes
// with its header). The largest tensor is 128 KiB (embedding, LM head), so
// the default 1 GiB window reads them in one Prefetch, and a 64 KiB window
// — no window holding more than one 128 KiB tensor or 64 KiB of smaller
// ones — in at least ⌈617 / 128⌉ = 5.
func TestCheckpointHostWindowReachesTheLoad(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	single := launch.Env{Size: 1, LocalSize: 1, Source: launch.SourceSingle}
	dir := checkpointtest.Dir(t, "llama-tiny")
	m, err := hf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg, err := configs.GenerateConfig(dir, 2, 16, 4, 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	windows := func(window int64) int {
		b, err := cudaCheckpoint(CheckpointOptions{DType: "fp32", HostWindowBytes: window}, single)
		if err != nil {
			t.Fatal(err)
		}
		var seen *prefetchCount
		weights := func(s model.Shard) (model.Source, error) {
			src, err := m.Shards(s)
			if err != nil {
				return nil, err
			}
			seen = &prefetchCount{Source: src}
			return seen, nil
		}
		c, err := b.NewCompute(plan, 0, weights, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cl, ok := c.(interface{ Close() error }); ok {
			cl.Close()
		}
		if seen == nil {
			t.Fatalf("window %d: the load read no checkpoint", window)
		}
		return seen.windows
	}
	if n := windows(0); n != 1 {
		t.Errorf("default window: %d windows, want 1", n)
	}
	if n := windows(64 << 10); n < 5 {
		t.Errorf("64 KiB window: %d windows, want at least 5", n)
	}
}
