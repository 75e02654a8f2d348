//go:build cgo

package serving

import (
	"context"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
	xcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/ncclcomm/nccltest"
	"github.com/partbench/partbench/partition"
)

// On the fake driver the engine's GPU Compute times no op: an iteration
// of 4 decoding sequences launches its kernels (LaunchStats counts them)
// but records no device marks around its ops (OpTimes is empty), where
// the timed Compute a run uses (exec/cuda Options{} without NoTiming)
// records one entry per op name after the same iteration.
func TestEngineOnFakeCUDAIsUntimed(t *testing.T) {
	ex, plan := fakeCUDAEngine(t, 4, 32)
	defer ex.Close()
	timed, err := xcuda.New(plan, 0, xcuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tex, err := newPassExecutor(plan, timed, "cuda", false)
	if err != nil {
		t.Fatal(err)
	}
	defer tex.Close()
	for _, e := range []*PassExecutor{ex, tex} {
		if err := e.Run(context.Background(), decodeBatch(4, 8)); err != nil {
			t.Fatal(err)
		}
	}
	c, ok := ex.c.(*xcuda.Compute)
	if !ok {
		t.Fatalf("the engine's Compute is %T, want exec/cuda's", ex.c)
	}
	times, err := c.OpTimes()
	if err != nil {
		t.Fatal(err)
	}
	if n := c.LaunchStats().Launches; n == 0 || len(times) != 0 {
		t.Errorf("engine: %d launches, %d timed ops; want launches and no timed op", n, len(times))
	}
	ttimes, err := timed.OpTimes()
	if err != nil {
		t.Fatal(err)
	}
	if len(ttimes) == 0 {
		t.Errorf("the timed Compute recorded no op after the same iteration")
	}
}

// fakeCUDAEngine is the GPU backend's engine of slots sequences of context
// tokens on test/single-tiny, on the fake driver (cudatest), and its plan.
func fakeCUDAEngine(tb testing.TB, slots, context int) (*PassExecutor, *partition.Plan) {
	tb.Helper()
	cudatest.Build(tb).Setenv(tb)
	nccltest.Setenv(tb)
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		tb.Fatal(err)
	}
	ec, err := EngineConfig(cfg, slots, context)
	if err != nil {
		tb.Fatal(err)
	}
	plan, err := partition.NewPlan(ec)
	if err != nil {
		tb.Fatal(err)
	}
	ex, err := NewPassExecutor(plan, "cuda", false)
	if err != nil {
		tb.Fatal(err)
	}
	return ex, plan
}
