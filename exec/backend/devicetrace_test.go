//go:build cgo

package backend

import (
	"context"
	"math"
	"testing"

	pexec "github.com/partbench/partbench/exec"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/partition"
)

// Where the measured decode steps run as CUDA graphs, a trace records them
// as the graphs ran (the op that launched a graph holds its time, the
// others are marked inside it) and once more op by op, with a device mark
// around each op, in one iteration after the measured ones. On the fake
// driver with FAKE_KERNEL_MS=1 (each kernel 1 ms, each event record
// 0.25 ms), single-tiny with its n decode ops and K kernels per step:
//   - measured step: the launching op's span is its timer's two records,
//     the graph's K kernels and the mark after it, 0.75 + K ms; each other
//     op's span is the mark after it, 0.25 ms: 0.5 + 0.25 n + K ms;
//   - op by op: every op between its timer's two records and the mark
//     after it, 0.75 ms plus its kernels: 0.75 n + K ms;
//   - so op by op exceeds the graph step by 0.5 (n − 1) ms, the timer
//     records the graph does not make.
func TestCudaTraceOpByOpBesideGraphs(t *testing.T) {
	plan, addr := fakeGPURun(t, "test/single-tiny", 1)
	t.Setenv("FAKE_KERNEL_MS", "1")
	r := runFakeRank0(t, plan, addr, 2, nil)
	if len(r.PrefillS) != 1 || len(r.StepEndS) != 1 {
		t.Fatalf("%d measured iterations, want 1 (the op-by-op iteration is not measured)", len(r.PrefillS))
	}
	n := len(plan.Program(0, partition.Decode).Ops)
	if len(r.OpSpans) != 2*n {
		t.Fatalf("%d op-by-op spans, want 2 steps × %d ops", len(r.OpSpans), n)
	}
	graphSum, byOpSum := map[int]float64{}, map[int]float64{}
	for i, s := range r.Spans {
		if s.Phase != string(partition.Decode) {
			if s.Graph != 0 {
				t.Errorf("prefill span %s: graph %d", s.Name, s.Graph)
			}
			continue
		}
		want := -1
		if (i-(len(r.Spans)-2*n))%n == 0 {
			want = n
		}
		if s.Graph != want || !s.Device {
			t.Errorf("span %d %s step %d: graph %d device %v, want graph %d on the device", i, s.Name, s.Step, s.Graph, s.Device, want)
		}
		graphSum[s.Step] += s.DurS
	}
	for _, s := range r.OpSpans {
		if s.Graph != 0 || !s.Device || s.Phase != string(partition.Decode) {
			t.Errorf("op-by-op span %s step %d: graph %d device %v phase %s", s.Name, s.Step, s.Graph, s.Device, s.Phase)
		}
		byOpSum[s.Step] += s.DurS
	}
	for step := 0; step < 2; step++ {
		k := graphSum[step]*1e3 - 0.5 - 0.25*float64(n) // the step's kernels, from the graph step
		if k < 1 || math.Abs(k-math.Round(k)) > 1e-6 {
			t.Errorf("step %d: graph step %.6g ms leaves %.6g kernels", step, graphSum[step]*1e3, k)
		}
		if d := (byOpSum[step] - graphSum[step]) * 1e3; math.Abs(d-0.5*float64(n-1)) > 1e-6 {
			t.Errorf("step %d: op by op %.6g ms, graph %.6g ms: differ by %.6g ms, want 0.5 × (%d − 1)", step, byOpSum[step]*1e3, graphSum[step]*1e3, d, n)
		}
	}
	sum, ok := pexec.SummarizeTrace(r)
	if !ok || sum.DecodeSteps != 2 || sum.GraphOps != 2*n || !sum.Device ||
		math.Abs(sum.DecodeOpByOpS-byOpSum[0]) > 1e-12 || math.Abs(sum.DecodeOpS-graphSum[0]) > 1e-12 {
		t.Errorf("trace summary %+v, want 2 steps, %d graph ops, op by op %g s, graph %g s", sum, 2*n, byOpSum[0], graphSum[0])
	}
}

// Without graphs the traced iteration's marks already time every op on
// its own: no op-by-op iteration follows the measured one (one warm-up,
// one measured, nothing more), every decode span is of an op alone, and
// the trace has no op-by-op spans.
func TestCudaTraceWithoutGraphsRunsNoExtraIteration(t *testing.T) {
	plan, addr := fakeGPURun(t, "test/single-tiny", 1)
	execs := 0
	r := runFakeRank0(t, plan, addr, 2, func(o *pexec.RunOptions) {
		cudaComm := o.NewComm
		o.NewComm = func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c pexec.Compute) (pexec.Comm, error) {
			return cudaComm(ctx, sess, plan, rank, c.(countingCompute).Compute)
		}
		o.NewCompute = func(plan *partition.Plan, rank int) (pexec.Compute, error) {
			c, err := pcuda.New(plan, rank, pcuda.Options{Device: 0})
			return countingCompute{c, &execs}, err
		}
	})
	if len(r.OpSpans) != 0 {
		t.Errorf("%d op-by-op spans without graphs, want none", len(r.OpSpans))
	}
	for _, s := range r.Spans {
		if s.Graph != 0 || !s.Device {
			t.Errorf("span %s step %d: graph %d device %v, want an op alone timed on the device", s.Name, s.Step, s.Graph, s.Device)
		}
	}
	// Two iterations (warm-up and measured) of the prefill and every decode
	// step's Program, and the tokens drained after each: no third.
	steps := plan.Config.Workload.OutputTokens - 1
	per := len(plan.Program(0, partition.Prefill).Ops) + steps*len(plan.Program(0, partition.Decode).Ops)
	if execs < 2*per || execs >= 3*per {
		t.Errorf("%d ops executed, want two iterations of %d (and no third)", execs, per)
	}
}

// countingCompute counts the ops a Compute executes.
type countingCompute struct {
	*pcuda.Compute
	n *int
}

func (c countingCompute) Exec(ctx context.Context, op *partition.Op, past int) error {
	*c.n++
	return c.Compute.Exec(ctx, op, past)
}

// On the fake driver, whose device memory in use is 1 GiB and its live
// allocations to the byte, and whose NCCL allocates nothing on the device,
// a run's device memory is its allocations: the setup took exactly
// AllocatedBytes, the communicator 4 bytes (exec/ncclcomm's barrier float),
// the measured iterations nothing, and the cuBLAS workspace (32 MiB) is
// named for the itemization.
func TestCudaMemoryItemized(t *testing.T) {
	plan, addr := fakeGPURun(t, "test/single-tiny", 1)
	r := runFakeRank0(t, plan, addr, 0, nil)
	d := r.DeviceMemory
	if d == nil {
		t.Fatal("no device memory read on the fake driver")
	}
	if d.AfterSetupBytes-d.BeforeSetupBytes != r.AllocatedBytes || d.AfterCommBytes-d.AfterSetupBytes != 4 || d.EndBytes != d.AfterCommBytes ||
		d.LibraryWorkspaceBytes != 32<<20 {
		t.Errorf("device memory %+v, allocated %d", *d, r.AllocatedBytes)
	}
	// By kind (compare.ItemizeMemory lays these out): the kinds sum to the
	// allocations, the weights are the model's, and the workspace holds
	// cuBLAS's.
	var sum int64
	for _, b := range r.AllocatedByKind {
		sum += b
	}
	if sum != r.AllocatedBytes || r.AllocatedByKind[pexec.AllocWeights] != plan.StageMemory[0].WeightBytes ||
		r.AllocatedByKind[pexec.AllocWorkspace] <= d.LibraryWorkspaceBytes {
		t.Errorf("by kind %v (sum %d), allocated %d, model weights %d", r.AllocatedByKind, sum, r.AllocatedBytes, plan.StageMemory[0].WeightBytes)
	}
}
