package cuda

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// Tests named RealGPU run on a machine with a GPU (scripts/gpu-check.sh runs
// them from a test binary) and skip elsewhere.

func realGPU(t *testing.T) {
	t.Helper()
	d, err := loadDriver()
	if err != nil {
		t.Skipf("no CUDA driver: %v", err)
	}
	if n, err := d.DeviceCount(); err != nil || n == 0 {
		t.Skipf("no CUDA device: %d devices, %v", n, err)
	}
}

// The GPU against exec/cpu on every test partitioning, in each element type.
func TestRealGPUCheck(t *testing.T) {
	realGPU(t)
	for _, dt := range []string{"fp32", "fp16", "bf16"} {
		for _, name := range []string{"test/single-tiny", "test/tp2pp2-tiny", "test/tp4-tiny", "test/pp4-tiny",
			"test/layerwise16-tiny", "test/tp8pp2-tiny", "test/layermap-tiny"} {
			t.Run(dt+"/"+strings.TrimPrefix(name, "test/"), func(t *testing.T) {
				cfg, err := configs.Load(name)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				res, err := pexec.Check(ctx, cfg, checkOptions(Options{DType: dt}))
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("max abs %.3g, max rel %.3g (tolerance %g, sequence %d, step %d), argmax mismatches %d of %d",
					res.MaxAbsErr, res.MaxRelErr, res.Tolerance, res.WorstSequence, res.WorstStep,
					len(res.ArgmaxMismatches), res.ArgmaxCompared)
				if err := res.Err(); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// Graphs change when work is queued, not what it computes: outputs after
// every decode step equal those of the op-by-op run bit for bit.
func TestRealGPUGraphsSameOutputs(t *testing.T) {
	realGPU(t)
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(graphs bool) ([][]float32, LaunchStats) {
		c, err := New(plan, 0, Options{DType: "fp16", Graphs: graphs, GraphAfter: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var outs [][]float32
		exec := func(prog partition.Program, past int) {
			for i := range prog.Ops {
				if err := c.Exec(ctx, &prog.Ops[i], past); err != nil {
					t.Fatal(err)
				}
			}
		}
		exec(plan.Program(0, partition.Prefill), 0)
		for step := 0; step < cfg.Workload.OutputTokens; step++ {
			exec(plan.Program(0, partition.Decode), cfg.Workload.PromptTokens()+step)
			outs = append(outs, c.Output(0))
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		return outs, c.LaunchStats()
	}
	eager, es := run(false)
	graphed, gs := run(true)
	for step := range eager {
		if !slices.Equal(eager[step], graphed[step]) {
			t.Errorf("decode step %d: outputs differ with graphs", step)
		}
	}
	if gs.GraphsCaptured != 1 || gs.CaptureFailures != 0 {
		t.Errorf("graphs: %+v", gs)
	}
	t.Logf("op by op: %+v", es)
	t.Logf("graphs:   %+v", gs)
}
