package cpu_test

import (
	"context"
	"slices"
	"testing"

	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/partition"
)

// TestEncoderCheck: the encoder option (bidirectional attention, one
// forward pass) goes through exec.Check as the prefill alone — on the
// seeded tp2pp2-tiny and on every partitioning of the checkpoint fixtures —
// and passes. The check is not vacuous: the encoder's outputs differ from
// the decoder's (causal) ones — the last position attends to every
// position either way, but in the first layer's output the earlier
// positions already saw later ones, which the second layer carries to the
// last position.
func TestEncoderCheck(t *testing.T) {
	base, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	enc := *base
	enc.Model.Encoder = true
	enc.Workload.Phases = []string{"prefill"}
	if err := enc.Validate(); err != nil {
		t.Fatal(err)
	}
	opts := pexec.CheckOptions{NewCompute: func(p *partition.Plan, r int) (pexec.Compute, error) { return cpu.New(p, r) }, NewComms: localcomm.Comms}
	res, err := pexec.Check(context.Background(), &enc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pass || res.DecodeSteps != 0 || res.ArgmaxCompared != enc.Workload.Batch {
		t.Fatalf("encoder check: pass %v, decode steps %d, argmax compared %d (want true, 0, %d): %v", res.Pass, res.DecodeSteps, res.ArgmaxCompared, enc.Workload.Batch, res.Err())
	}
	// The encoder's and the decoder's single-rank outputs after the prefill.
	last := func(c *configs.Config) []float32 {
		single := *c
		single.Parallel.TP, single.Parallel.PP, single.Parallel.Microbatches, single.Parallel.LayerMap = 1, 1, 1, nil
		single.Topology.Nodes, single.Topology.GPUsPerNode = 1, 1
		plan, err := partition.NewPlan(&single)
		if err != nil {
			t.Fatal(err)
		}
		comp, err := cpu.New(plan, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer comp.Close()
		comm := localcomm.Comms(1)[0]
		defer comm.Close()
		groups, err := pexec.NewGroups(context.Background(), comm, plan, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := pexec.RunProgram(context.Background(), plan.Program(0, partition.Prefill), comp, comm, groups, pexec.Past(plan, partition.Prefill, 0)); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(comp.Output(0))
	}
	if slices.Equal(last(&enc), last(base)) {
		t.Fatal("the encoder's outputs equal the decoder's: attention is not bidirectional")
	}
	if _, err := pexec.Check(context.Background(), &enc, pexec.CheckOptions{DecodeSteps: 1, NewCompute: opts.NewCompute, NewComms: opts.NewComms}); err == nil {
		t.Fatal("decode steps accepted for an encoder")
	}
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		run := configs.ModelDirRun{Dir: checkpointtest.Dir(t, fx), Batch: 2, Context: 16, OutputTokens: 4, DType: "fp32", Encoder: true}
		results, err := cpu.CheckModelDir(context.Background(), run, 4, pexec.CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(results) < 4 {
			t.Fatalf("%s: %d partitionings checked, want ≥ 4", fx, len(results))
		}
		for _, r := range results {
			if !r.Pass || r.DecodeSteps != 0 {
				t.Errorf("%s %s: pass %v, decode steps %d: %v", fx, r.Config, r.Pass, r.DecodeSteps, r.Err())
			}
		}
	}
}
