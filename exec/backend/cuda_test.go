//go:build cgo

package backend

import (
	"context"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/ncclcomm/nccltest"
	"github.com/partbench/partbench/partition"
)

// cudaBackend is cudaRank's constructors as two values.
func cudaBackend(env launch.Env) (NewComputeFunc, NewCommFunc, error) {
	r, err := cudaRank(env)
	return r.NewCompute, r.NewComm, err
}

func TestCudaAvailable(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	if err := cudaAvailable(); err != nil {
		t.Errorf("fake driver with two GPUs: %v", err)
	}
	cudatest.Build(t, "FAKE_NO_DEVICE").Setenv(t)
	if err := cudaAvailable(); err == nil || !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("driver whose cuInit finds no device: %v", err)
	}
	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/libcuda.so.1")
	if err := cudaAvailable(); err == nil || !strings.Contains(err.Error(), "PARTBENCH_CUDA_LIB") {
		t.Errorf("no driver: %v", err)
	}
}

func TestCudaCheckOptions(t *testing.T) {
	for dtype, tol := range map[string]float64{"": 1e-4, "fp32": 1e-4, "fp16": 2e-2, "bf16": 1e-1} {
		if got := cudaCheckOptions(dtype).Tolerance; got != tol {
			t.Errorf("dtype %q: tolerance %g, want %g", dtype, got, tol)
		}
	}
}

// Without NCCL the backend is refused before any rank joins.
func TestCudaBackendWithoutNCCL(t *testing.T) {
	t.Setenv("PARTBENCH_NCCL_LIB", t.TempDir()+"/libnccl.so.2")
	if _, _, err := cudaBackend(launch.Env{}); err == nil || !strings.Contains(err.Error(), "NCCL") {
		t.Errorf("cudaBackend without NCCL: %v", err)
	}
}

// The Compute is on the rank's local GPU; a communicator needs that Compute.
func TestCudaBackendCompute(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	nccltest.Setenv(t)
	newCompute, newComm, err := cudaBackend(launch.Env{LocalRank: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newCompute(plan, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if gc, ok := c.(*pcuda.Compute); !ok || gc.DeviceInfo().Ordinal != 1 {
		t.Errorf("compute: %T, want an exec/cuda Compute on GPU 1", c)
	}
	if _, err := newComm(context.Background(), nil, plan, 2, nil); err == nil || !strings.Contains(err.Error(), "GPU backend's Compute") {
		t.Errorf("communicator without a GPU Compute: %v", err)
	}
}

// The whole GPU path of a run on the fakes: four ranks of tp2pp2-tiny in
// fp16 as goroutines, each through exec.Run with cudaBackend's
// constructors (rendezvous, unique ids broadcast, NCCL communicators made
// with each rank's Compute, groups, warm-up, measured iterations,
// gather). Every rank's counts equal the Program's: prefill once and the
// decode Program once per step, per measured iteration.
func TestCudaBackendRunOnFakes(t *testing.T) {
	plan, addr := fakeGPURun(t, "test/tp2pp2-tiny", 2)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results := make([][]pexec.RankResult, plan.Size())
	errs := make([]error, plan.Size())
	var wg sync.WaitGroup
	for r := range plan.Size() {
		env := launch.Env{Rank: r, Size: plan.Size(), LocalRank: r % 2, LocalSize: 2, Source: launch.SourceRankEnv, RendezvousAddr: addr}
		newCompute, newComm, err := cudaBackend(env)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			results[r], errs[r] = pexec.Run(ctx, pexec.RunOptions{Plan: plan, Env: env, Backend: "cuda",
				NewCompute: newCompute, NewComm: newComm, JoinTimeout: 20 * time.Second})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	got := results[0]
	if len(got) != plan.Size() {
		t.Fatalf("rank 0 gathered %d results", len(got))
	}
	steps := plan.Config.Workload.OutputTokens - 1
	for _, res := range got {
		prefill := plan.Counts(plan.Program(res.Rank, partition.Prefill)).Times(plan.Config.Run.Iterations)
		decode := plan.Counts(plan.Program(res.Rank, partition.Decode)).Times(steps * plan.Config.Run.Iterations)
		for _, c := range []struct {
			phase     string
			want, got commcount.Snapshot
		}{{"prefill", prefill, res.PrefillCounts}, {"decode", decode, res.DecodeCounts}} {
			if d := commcount.Diff(c.want, c.got); len(d) > 0 {
				t.Errorf("rank %d %s: %v", res.Rank, c.phase, d)
			}
		}
		if res.Backend != "cuda" || res.AllocatedBytes == 0 {
			t.Errorf("rank %d: backend %q, %d bytes allocated", res.Rank, res.Backend, res.AllocatedBytes)
		}
	}
}

// A traced run on the GPU backend takes each span's time from events on
// the rank's stream (exec.DeviceClock), not from the host clock around the
// call. The fake driver's clock moves 0.25 ms per event record, so every
// span's device time is known: a mark before the op, the op's own records,
// a mark after. single-tiny on one rank (3 decode steps per iteration,
// graphs on, captured after 2 op-by-op runs, so in the warm-up iteration):
//   - prefill ops run op by op between the timer's two events: 3 records
//     from the mark before to the mark after, 0.75 ms;
//   - a traced decode step replays its graph: its first op launches it
//     between two timer events (0.75 ms), the others queue nothing (0.25 ms);
//   - each span starts 0.25 ms after the previous one ended (the next op's
//     mark), so the first span starts at 0 and the spans tile the trace.
func TestCudaBackendDeviceTrace(t *testing.T) {
	plan, addr := fakeGPURun(t, "test/single-tiny", 1)
	r := runFakeRank0(t, plan, addr, 2, nil)
	var sum int64
	for _, b := range r.AllocatedByKind {
		sum += b
	}
	if len(r.AllocatedByKind) != 4 || sum != r.AllocatedBytes {
		t.Errorf("allocated by kind %v (sum %d), AllocatedBytes %d", r.AllocatedByKind, sum, r.AllocatedBytes)
	}
	if r.SpanClock != "device" {
		t.Fatalf("span clock %q, want device", r.SpanClock)
	}
	nPrefill, nDecode := len(plan.Program(0, partition.Prefill).Ops), len(plan.Program(0, partition.Decode).Ops)
	if len(r.Spans) != nPrefill+2*nDecode {
		t.Fatalf("%d spans, want %d prefill + 2 × %d decode ops", len(r.Spans), nPrefill, nDecode)
	}
	const q = 0.25e-3
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	end := -q
	var prefillSum float64
	for i, s := range r.Spans {
		want := 3 * q
		if s.Phase == string(partition.Decode) && (i-nPrefill)%nDecode != 0 {
			want = q
		}
		if !s.Device || !near(s.DurS, want) || !near(s.StartS, end+q) {
			t.Errorf("span %d %s %s step %d: device %v start %g dur %g, want start %g dur %g",
				i, s.Phase, s.Name, s.Step, s.Device, s.StartS, s.DurS, end+q, want)
		}
		end = s.StartS + s.DurS
		if s.Phase == string(partition.Prefill) {
			prefillSum += s.DurS
		}
	}
	// The prefill spans sum to the prefill's device time less the gaps
	// between one op's end mark and the next op's start mark.
	if !near(prefillSum, float64(nPrefill)*3*q) {
		t.Errorf("prefill spans sum to %g s, want %d ops × 0.75 ms", prefillSum, nPrefill)
	}
}

// fakeGPURun sets up the fake CUDA driver and NCCL for a test of the GPU
// path and returns the named config's plan in fp16 with one warm-up and
// iterations measured iterations, and a free loopback rendezvous address.
func fakeGPURun(t *testing.T, name string, iterations int) (*partition.Plan, string) {
	t.Helper()
	cudatest.Build(t).Setenv(t)
	nccltest.Setenv(t)
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.DType = "fp16"
	cfg.Run.Warmup, cfg.Run.Iterations = 1, iterations
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return plan, ln.Addr().String()
}

// runFakeRank0 runs plan's rank 0 alone on the fake driver set up by
// fakeGPURun (its rendezvous at addr), its decode ops traced for
// traceDecodeSteps steps (0: no trace), and returns its result. with, when
// not nil, changes the run's options first (another Compute, say).
func runFakeRank0(t *testing.T, plan *partition.Plan, addr string, traceDecodeSteps int, with func(o *pexec.RunOptions)) pexec.RankResult {
	t.Helper()
	env := launch.Env{Rank: 0, Size: 1, LocalSize: 1, Source: launch.SourceRankEnv, RendezvousAddr: addr}
	newCompute, newComm, err := cudaBackend(env)
	if err != nil {
		t.Fatal(err)
	}
	o := pexec.RunOptions{Plan: plan, Env: env, Backend: "cuda", NewCompute: newCompute, NewComm: newComm,
		JoinTimeout: 20 * time.Second, TraceDecodeSteps: traceDecodeSteps}
	if with != nil {
		with(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := pexec.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// A Compute that talks to no other rank needs the CUDA driver only: with
// the fake driver and NCCL pointed at a file that does not exist,
// DeviceCompute still makes a GPU Compute (New would refuse: NCCL), and
// without a driver the error names the driver's search as a run's does.
func TestCudaDeviceWithoutNCCL(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv("PARTBENCH_NCCL_LIB", t.TempDir()+"/libnccl.so.2")
	r := Default()
	if _, err := r.Setup("cuda", mustConfig(t, "test/single-tiny"), launch.Env{Size: 1, LocalSize: 1}); err == nil || !strings.Contains(err.Error(), "NCCL") {
		t.Fatalf("a run still needs NCCL: %v", err)
	}
	b, newCompute, err := r.DeviceCompute("cuda", launch.Env{Size: 1, LocalSize: 1})
	if err != nil {
		t.Fatalf("DeviceCompute without NCCL: %v", err)
	}
	if b.Name != "cuda" {
		t.Errorf("backend %q, want cuda", b.Name)
	}
	plan, err := partition.NewPlan(mustConfig(t, "test/single-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newCompute(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*pcuda.Compute); !ok {
		t.Errorf("Compute %T, want *cuda.Compute", c)
	}
	c.Close()

	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/libcuda.so.1")
	_, _, err = r.DeviceCompute("cuda", launch.Env{Size: 1, LocalSize: 1})
	if err == nil || !strings.Contains(err.Error(), "--backend cuda") || !strings.Contains(err.Error(), "libcuda.so.1") || !strings.Contains(err.Error(), "PARTBENCH_CUDA_LIB") {
		t.Errorf("no driver: %v", err)
	}
	if err := r.Available("cuda"); err == nil || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Errorf("Available(cuda) without a driver: %v", err)
	}
	if err := r.Available("cpu"); err != nil {
		t.Errorf("Available(cpu): %v", err)
	}
	if err := r.Available("tpu"); err == nil || !strings.Contains(err.Error(), "must be cuda, cpu or auto") {
		t.Errorf("Available(tpu): %v", err)
	}
}

func mustConfig(t *testing.T, name string) *configs.Config {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
