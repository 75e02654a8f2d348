//go:build cgo

package resume

import (
	"context"
	"testing"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/server"
)

// TestMeasureOnFakeCUDA: `resume --backend cuda` takes its Compute from
// the backend registry (GPU 0, no NCCL: none is installed here) and runs
// recompute, offload and stateful (a server whose engine is the GPU
// backend too) on the fake driver. The fake kernels compute nothing, so
// this proves the plumbing, not the arithmetic: recompute's and offload's
// outputs equal the reference's bit for bit, the offload moves single-tiny's x each way (4 sequences ×
// 20 prompt rows × 64 × 4 B = 20,480 B), recompute replays 10 layer ops
// per layer paused at (10 · 2 = 20), the offload allocated one pinned host
// copy for all its trials, and Close freed it.
func TestMeasureOnFakeCUDA(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv("PARTBENCH_NCCL_LIB", t.TempDir()+"/libnccl.so.2")
	o := MeasureOptions{Config: "test/single-tiny", Backend: "cuda", Layers: "2", Strategies: "recompute,offload,stateful",
		Link: "loopback", Trials: 2, Warmup: 1}
	s, err := Prepare(MeasureOptions{Config: o.Config, Backend: o.Backend, Layers: o.Layers, Strategies: o.Strategies, Link: o.Link,
		Conn: remote.ConnectOptions{Server: "127.0.0.1:1"}}) // a server named for the check; the session below is in-process
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCompute(s, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*pcuda.Compute); !ok {
		t.Fatalf("the registry made %T for --backend cuda", c)
	}
	drv, err := cuda.Load() // the same library the Compute loaded: its counters
	if err != nil {
		t.Fatal(err)
	}
	counts := func() map[string]int {
		m, err := cudatest.Counters(drv.ErrorName(cuda.Result(cudatest.Trace)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := counts()

	eng, err := server.BackendEngine("cuda")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(server.ServerConfig{}, eng)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := srv.ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	cl, err := remote.Dial(testCtx(t), remote.ClientConfig{Addr: addr.String(), Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sess, err := cl.Open(testCtx(t), s.Plan.Config, partition.RemoteStateful, partition.RemoteOptions{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLocal(s.Plan, c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(testCtx(t), s.Plan, Options{Layers: s.Layers, Strategies: s.Strategies, Trials: o.Trials, Warmup: o.Warmup,
		Delta: Perturb(1, s.Plan.Model.Hidden, 0.1), Local: l, Session: sess, Addr: addr.String(), Backend: o.Backend})
	if err != nil {
		t.Fatal(err)
	}
	if res.Backend != "cuda" || len(res.Results) != 3 {
		t.Fatalf("result: backend %q, %d rows", res.Backend, len(res.Results))
	}
	for _, row := range res.Results {
		switch row.Strategy {
		case partition.ResumeOffload:
			if row.ToHostBytes != 20480 || row.ToDeviceBytes != 20480 {
				t.Errorf("offload moved %d B to the host and %d B back, want 20,480 each", row.ToHostBytes, row.ToDeviceBytes)
			}
		case partition.ResumeRecompute:
			if row.ReplayedLayerOps != 20 {
				t.Errorf("recompute replayed %d layer ops, want 20", row.ReplayedLayerOps)
			}
		case partition.ResumeStateful:
			// The modification only: 64 × 4 B. Its output is not compared
			// here: the fake's argmax kernel writes no sampled ids, so the
			// local side reads the allocation's fill where the server's
			// reply carries ids.
			if row.NetUpBytes != 256 {
				t.Errorf("stateful sent %d B, want the modification's 256", row.NetUpBytes)
			}
			continue
		}
		if row.Mismatches != 0 {
			t.Errorf("%s: %d resumed outputs differ from the uninterrupted forward", row.Strategy, row.Mismatches)
		}
	}
	if got := counts()["hostAllocs"] - before["hostAllocs"]; got != 1 {
		t.Errorf("the offload's %d trials made %d pinned allocations, want 1 (reused)", o.Trials+o.Warmup, got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if after := counts(); after["hostAllocs"]-before["hostAllocs"] != after["hostFrees"]-before["hostFrees"] {
		t.Errorf("pinned allocations %d, frees %d after Close: a leak", after["hostAllocs"]-before["hostAllocs"], after["hostFrees"]-before["hostFrees"])
	}
}
