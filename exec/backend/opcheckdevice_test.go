//go:build cgo

package backend

import (
	"math"
	"testing"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// A GPU run without --trace times its ops for the op check on the device:
// one more iteration after the measured ones (not measured), decode graphs
// suspended, a device mark around every op of its prefill and first
// CheckDecodeSteps decode steps. On the fake driver with FAKE_KERNEL_MS=1
// (each kernel 1 ms, each event record 0.25 ms) every op's span is its
// timer's two records and the mark after it, 0.75 ms, plus its kernels
// (see TestCudaTraceOpByOpBesideGraphs): a decode step's spans sum to
// 0.75 n + K ms for its n ops and K ≥ 1 kernels. compare.OpCheck reads
// these (TestOpCheckAsyncDevice), never the host's enqueue.
func TestCudaOpCheckOnTheDevice(t *testing.T) {
	plan, addr := fakeGPURun(t, "test/single-tiny", 1)
	t.Setenv("FAKE_KERNEL_MS", "1")
	r := runFakeRank0(t, plan, addr, 0, nil)
	if !r.Async || len(r.Spans) != 0 || r.SpanClock != "" {
		t.Fatalf("async %t, %d trace spans, span clock %q: want an asynchronous rank and no trace", r.Async, len(r.Spans), r.SpanClock)
	}
	if len(r.PrefillS) != 1 {
		t.Fatalf("%d measured iterations, want 1 (the op check's iteration is not measured)", len(r.PrefillS))
	}
	np, nd := len(plan.Program(0, partition.Prefill).Ops), len(plan.Program(0, partition.Decode).Ops)
	steps := min(plan.Config.Workload.OutputTokens-1, pexec.CheckDecodeSteps)
	if len(r.CheckSpans) != np+steps*nd {
		t.Fatalf("%d op-check spans, want %d prefill ops + %d steps × %d ops", len(r.CheckSpans), np, steps, nd)
	}
	byStep := map[int]float64{}
	for _, s := range r.CheckSpans {
		if !s.Device || s.Graph != 0 {
			t.Fatalf("op-check span %s %s step %d: device %t graph %d, want on the device, op by op", s.Phase, s.Name, s.Step, s.Device, s.Graph)
		}
		if s.Phase == string(partition.Decode) {
			byStep[s.Step] += s.DurS
		}
	}
	for step := 0; step < steps; step++ {
		k := byStep[step]*1e3 - 0.75*float64(nd) // the step's kernels
		if k < 1 || math.Abs(k-math.Round(k)) > 1e-6 {
			t.Errorf("step %d: %.6g ms leaves %.6g kernels, want a whole number ≥ 1", step, byStep[step]*1e3, k)
		}
	}
}
