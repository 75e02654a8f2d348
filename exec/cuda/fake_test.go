//go:build cgo

package cuda

import (
	"context"
	"github.com/partbench/partbench/model"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// With the fake driver, cuBLAS and NVRTC (cgo/cuda/cudatest), New runs
// every step a GPU would: compile, load, allocate, generate and upload the
// weights. The fake kernels compute nothing, but every launch's parameters
// are checked against its kernel's signature, device memory is host
// memory, and graph capture records and replays.
func fakeCompute(t *testing.T, plan *partition.Plan, rank int, opts Options) *Compute {
	t.Helper()
	c, err := New(plan, rank, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func TestNewOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/tp2pp2-tiny")
	c := fakeCompute(t, plan, 3, Options{DType: "fp16"}) // last stage, TP index 1
	if c.DType() != "fp16" || c.Kernels() != "cubin sm_90" {
		t.Errorf("dtype %s, kernels %q", c.DType(), c.Kernels())
	}
	if c.DeviceInfo().Name != "Fake H100 0" || c.DeviceInfo().SMs != 132 {
		t.Errorf("device %+v", c.DeviceInfo())
	}
	// Allocated bytes, derived from the tiny config (H 64, heads 8, kv 4,
	// hd 8, ffn 128 gated, vocab 96, batch 4, context 24, tp 2, 2
	// micro-batches of 2, prompt 20 in one chunk), 2-byte elements:
	//   layers 4..7 each: norms 2·64, wqkv 64·(4+2·2)·8 = 4096, wo 32·64 = 2048,
	//     w_up 64·128 = 8192, w_down 64·64 = 4096 → 18560 elements;
	//   final_norm 64, lm_head 64·48 = 3072;
	//   KV per layer 2 · 4·24·16 = 3072;
	//   shared by the 2 micro-batches (rows 2·20 = 40): x, h, y 3·2560; qkv
	//     40·64 = 2560 and u 40·128 = 5120 in one region of 5120, ao 1280 and
	//     a 2560 in one of 2560 (partition.StorageOf); logits 96, gathered
	//     192 → 15648 elements;
	//   per micro-batch: tokens 40·4 bytes, pos 4, out 192 elements, sampled 8;
	//   the rotary table (extra.go): 24 positions · 4 pairs · (cos, sin) fp32 = 768 bytes.
	elems := 4*18560 + 64 + 3072 + 4*3072 + 15648 + 2*192
	want := int64(2*elems + 2*(160+4+8) + 8 + cublasWorkspaceBytes + 768)
	if got := c.AllocatedBytes(); got != want {
		t.Errorf("AllocatedBytes = %d, want %d", got, want)
	}
	b, err := c.Buffer(model.Logits.Gathered(), 1, 192)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 192 || b.Bytes() != 384 || b.(*Buffer).DataType().String() != "CUDA_R_16F" {
		t.Errorf("buffer %v: len %d bytes %d", b, b.Len(), b.Bytes())
	}
	if tok, _ := c.Buffer(model.Tokens, 0, 2); tok.Bytes() != 8 {
		t.Errorf("tokens are float32: %d bytes for 2", tok.Bytes())
	}
	if _, err := c.Buffer(model.Logits.Gathered(), 1, 193); err == nil {
		t.Error("193 elements of a 192-element buffer accepted")
	}
	if _, err := c.Buffer(model.Buf(99), 0, 1); err == nil {
		t.Error("unknown buffer accepted")
	}
}

// AllocatedByKind splits TestNewOnFakes's total by the same hand count
// (rank 3 of tp2pp2-tiny in fp16, 2-byte elements).
func TestAllocatedByKindOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/tp2pp2-tiny")
	c := fakeCompute(t, plan, 3, Options{DType: "fp16"})
	want := map[string]int64{
		pexec.AllocWeights:   2 * (4*18560 + 64 + 3072),
		pexec.AllocKV:        2 * 4 * 3072,
		pexec.AllocBuffers:   2*(15648+2*192) + 2*(160+4+8),
		pexec.AllocWorkspace: 8 + cublasWorkspaceBytes + 768, // the invalid-token flag, cuBLAS's workspace, the rotary table
	}
	got := c.AllocatedByKind()
	if !maps.Equal(got, want) {
		t.Errorf("by kind %v, want %v", got, want)
	}
	var sum int64
	for _, b := range got {
		sum += b
	}
	if sum != c.AllocatedBytes() {
		t.Errorf("kinds sum to %d, AllocatedBytes %d", sum, c.AllocatedBytes())
	}
	// The plan's own weight and KV figures for the rank, in fp16.
	rk := plan.Ranks[3]
	if got[pexec.AllocWeights] != rk.Memory.WeightBytes/2 || got[pexec.AllocKV] != rk.Memory.KVCacheBytes/2 {
		t.Errorf("weights %d, KV %d: want half the fp32 plan's %d and %d", got[pexec.AllocWeights], got[pexec.AllocKV], rk.Memory.WeightBytes, rk.Memory.KVCacheBytes)
	}
}

// Buffers round-trip through device memory, rounded to the element type.
func TestBufferReadWrite(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	for _, dt := range []string{"fp16", "bf16", "fp32"} {
		c := fakeCompute(t, tinyPlan(t, "test/single-tiny"), 0, Options{DType: dt})
		buf, err := c.Buffer(model.X, 0, 4)
		if err != nil {
			t.Fatal(err)
		}
		b := buf.(*Buffer)
		in := []float32{1, 1.0 / 3, -70000, 1e-9}
		if err := b.WriteF32(in); err != nil {
			t.Fatal(err)
		}
		out, err := b.ReadF32()
		if err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if want := dtypes[dt].round(in[i]); out[i] != want {
				t.Errorf("%s: element %d = %v, want %v", dt, i, out[i], want)
			}
		}
		if err := b.WriteF32(in[:3]); err == nil {
			t.Errorf("%s: short write accepted", dt)
		}
	}
}

// The sample op copies the gathered logits aside (a device copy, which the
// fake performs) and Output returns them in exec/cpu's [seqs][vocab] layout.
func TestOutputLayout(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/tp2pp2-tiny")
	c := fakeCompute(t, plan, 2, Options{DType: "fp16"})
	const seqs, vp, vocab = 2, 96, 96
	gathered := make([]float32, seqs*vp)
	for i := range gathered {
		gathered[i] = float32(i) / 8 // exact in fp16
	}
	buf, _ := c.Buffer(model.Logits.Gathered(), 0, seqs*vp)
	if err := buf.(*Buffer).WriteF32(gathered); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	prog := plan.Program(2, partition.Prefill)
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if op.Microbatch != 0 || op.Kind == partition.Sample {
			continue
		}
		if _, comm := op.Kind.Comm(); comm {
			continue
		}
		if err := c.Exec(ctx, op, 0); err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
	}
	if c.Output(0) != nil {
		t.Error("output before any sample")
	}
	for i := range prog.Ops {
		if op := &prog.Ops[i]; op.Kind == partition.Sample && op.Microbatch == 0 {
			if err := c.Exec(ctx, op, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := c.Output(0)
	if len(out) != seqs*vocab {
		t.Fatalf("output of %d values, want %d", len(out), seqs*vocab)
	}
	// Shard t of sequence i holds ids [48t, 48t+48) at (t·2 + i)·48.
	for i := 0; i < seqs; i++ {
		for v := 0; v < vocab; v++ {
			want := gathered[((v/48)*seqs+i)*48+v%48]
			if out[i*vocab+v] != want {
				t.Fatalf("output[%d][%d] = %v, want %v", i, v, out[i*vocab+v], want)
			}
		}
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if s := c.Sampled(0); len(s) != seqs {
		t.Errorf("Sampled = %v", s)
	}
	times, err := c.OpTimes()
	if err != nil {
		t.Fatal(err)
	}
	// Every op ran between two events; the fake clock moves 0.25 ms per record.
	for _, ot := range times {
		if ot.Calls < 1 || ot.GPUS != float64(ot.Calls)*0.25e-3 {
			t.Errorf("%+v", ot)
		}
	}
	if len(times) == 0 {
		t.Error("no op times")
	}
}

// exec.Check runs every rank on the fakes end to end: the staged
// communicator moves device buffers, the counted communication equals the
// Program's, and with graphs on the decode segments are captured after
// their warm-up runs and replayed. (The fake kernels compute nothing, so
// the numbers cannot match the reference; a GPU session checks those.)
func TestCheckRunsOnFakesWithGraphs(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	for _, name := range []string{"test/tp2pp2-tiny", "test/single-tiny", "test/tp8pp2-tiny"} {
		t.Run(strings.TrimPrefix(name, "test/"), func(t *testing.T) {
			cfg, err := configs.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			var made []*Compute
			opts := checkOptions(Options{DType: "fp16", Graphs: true, GraphAfter: 1})
			newCompute := opts.NewCompute
			opts.NewCompute = func(plan *partition.Plan, rank int) (pexec.Compute, error) {
				c, err := newCompute(plan, rank)
				if g, ok := c.(*Compute); ok {
					made = append(made, g)
				}
				return c, err
			}
			opts.DecodeSteps = cfg.Workload.OutputTokens // 4: eager, capture, replay, replay
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := pexec.Check(ctx, cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.CountDiffs) > 0 {
				t.Errorf("counted communication differs from the Program: %+v", res.CountDiffs)
			}
			if len(made) != cfg.Parallel.TP*cfg.Parallel.PP {
				t.Fatalf("%d GPU ranks made", len(made))
			}
			for r, c := range made {
				s := c.LaunchStats()
				// Each segment: eager at step 1, captured at 2, replayed at 3 and 4.
				if s.Segments == 0 || s.GraphsCaptured != s.Segments || s.CaptureFailures != 0 {
					t.Errorf("rank %d: %+v", r, s)
				}
				if s.GraphLaunches != int64(3*s.Segments) || s.GraphSegmentRuns != int64(2*s.Segments) {
					t.Errorf("rank %d: %d graph launches, %d replayed segments for %d segments",
						r, s.GraphLaunches, s.GraphSegmentRuns, s.Segments)
				}
			}
		})
	}
}

// A replayed decode step queues one memset (the position) and one graph
// launch instead of every kernel.
func TestGraphReplayLaunchCount(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/single-tiny")
	c := fakeCompute(t, plan, 0, Options{DType: "bf16", Graphs: true})
	ctx := context.Background()
	prefill, decode := plan.Program(0, partition.Prefill), plan.Program(0, partition.Decode)
	run := func(prog partition.Program, past int) {
		t.Helper()
		for i := range prog.Ops {
			if err := c.Exec(ctx, &prog.Ops[i], past); err != nil {
				t.Fatalf("%s: %v", prog.Ops[i].Name, err)
			}
		}
	}
	run(prefill, 0)
	prompt := plan.Config.Workload.PromptTokens()
	var perStep []int64
	for step := 0; step < 4; step++ {
		before := c.LaunchStats().Launches
		run(decode, prompt+step)
		perStep = append(perStep, c.LaunchStats().Launches-before)
	}
	s := c.LaunchStats()
	if s.Segments != 1 || s.GraphsCaptured != 1 || s.GraphLaunches != 2 {
		t.Fatalf("%+v", s)
	}
	// Steps 0 and 1 run op by op (GraphAfter 2), step 2 is captured (its
	// launches are recorded, not run, and counted alike), step 3 replays:
	// one memset of the position.
	if perStep[0] != perStep[1] || perStep[2] != perStep[0] || perStep[3] != 1 {
		t.Errorf("launches per decode step %v", perStep)
	}
	if s.EagerSegmentRuns != 1 || s.GraphSegmentRuns != 1 {
		t.Errorf("eager %d, graph %d segment runs", s.EagerSegmentRuns, s.GraphSegmentRuns)
	}
	// A decode step out of the Program's order after the graph ran is an error.
	if err := c.Exec(ctx, &decode.Ops[0], prompt+3); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(ctx, &decode.Ops[2], prompt+3); err == nil || !strings.Contains(err.Error(), "already ran") {
		t.Errorf("out-of-order op after a replay: err = %v", err)
	}
}

// A capture that fails (here: instantiation) runs the captured ops op by op
// at once and leaves the segment eager; the step's results are there.
func TestFailedCaptureRunsOpByOp(t *testing.T) {
	cudatest.Build(t, "FAKE_BAD_GRAPH").Setenv(t)
	plan := tinyPlan(t, "test/single-tiny")
	c := fakeCompute(t, plan, 0, Options{DType: "fp16", Graphs: true, GraphAfter: 1})
	ctx := context.Background()
	for i, prog := range []partition.Program{plan.Program(0, partition.Prefill), plan.Program(0, partition.Decode),
		plan.Program(0, partition.Decode), plan.Program(0, partition.Decode)} {
		past := 0
		if i > 0 {
			past = plan.Config.Workload.PromptTokens() + i - 1
		}
		for j := range prog.Ops {
			if err := c.Exec(ctx, &prog.Ops[j], past); err != nil {
				t.Fatalf("pass %d %s: %v", i, prog.Ops[j].Name, err)
			}
		}
	}
	s := c.LaunchStats()
	if s.CaptureFailures != 1 || s.GraphsCaptured != 0 || s.GraphLaunches != 0 ||
		!strings.Contains(s.LastCaptureError, "cuGraphInstantiateWithFlags") {
		t.Errorf("%+v", s)
	}
	if c.Output(0) == nil {
		t.Error("no output after the failed capture's step")
	}
}

// The GPT-2-style ops (LayerNorm with bias, bias after each GEMM, learned
// positions, no rotary, tied LM head) launch with their kernels'
// signatures, eagerly and inside captured and replayed decode graphs, and
// the communication they count is the Program's. The fake kernels compute
// nothing: numbers are exec/cpu's tests' business.
func TestGPT2RunsOnFakesWithGraphs(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.Arch, cfg.Model.GatedMLP, cfg.Model.KVHeads, cfg.Model.MaxPositions = configs.ArchGPT2, false, 8, 32
	var made []*Compute
	opts := checkOptions(Options{DType: "bf16", Graphs: true, GraphAfter: 1})
	newCompute := opts.NewCompute
	opts.NewCompute = func(plan *partition.Plan, rank int) (pexec.Compute, error) {
		c, err := newCompute(plan, rank)
		if g, ok := c.(*Compute); ok {
			made = append(made, g)
		}
		return c, err
	}
	opts.DecodeSteps = cfg.Workload.OutputTokens
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := pexec.Check(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.CountDiffs) > 0 {
		t.Errorf("counted communication differs from the Program: %+v", res.CountDiffs)
	}
	if len(made) != 4 {
		t.Fatalf("%d GPU ranks made", len(made))
	}
	for r, c := range made {
		if s := c.LaunchStats(); s.GraphsCaptured == 0 || s.CaptureFailures != 0 {
			t.Errorf("rank %d: %+v", r, s)
		}
	}
}
