//go:build cgo

package serving

import (
	"context"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
	xcuda "github.com/partbench/partbench/exec/cuda"
)

// The launches of test/single-tiny's engine, counted by hand. Its pass
// (8 layers; llama-style: no position table, no bias, gated MLP, an LM
// head) is embed; per layer attn_norm, wqkv, attn, wo, attn_residual,
// mlp_norm, w_up, act, w_down, mlp_residual; final_norm, lm_head, sample.
// On exec/cuda:
//
//	per batched pass: 8 layers × 9 ops of one launch (2 norms, 4 GEMMs,
//	  act, 2 residuals) = 72, of them kernels 8 × 5 = 40 (the GEMMs are
//	  cuBLAS calls). Where the pass's rows are those of a pass of the
//	  batch micro-batch's own Programs (1 row decoding, 64 = the chunk
//	  prefilling), each residual runs the norm after it (fuse.go): the
//	  8 + 7 norms that follow a residual in the batch launch nothing,
//	  72 − 15 = 57, kernels 25
//	per sequence: its position (1 memset) + pb_prompt_tokens + pb_embed
//	  + 1 copy of its rows into the batch + 8 × (pb_rope_kv + attention +
//	  2 copies) = 36, kernels 2 + 8 × 2 = 18
//	per sampling sequence: 1 copy of its last row + final_norm + lm_head +
//	  pb_teacher + the logits copy + pb_argmax = 6, kernels 3
//	per sequence alone (--per-sequence): 3 + 72 + 8 × 2 = 91, kernels 58;
//	  sampling, 5 and 3 more; a decode (1 row: the slot's own decode
//	  Program) fuses all 16 norms (the final norm too): 96 − 16 = 80,
//	  kernels 61 − 16 = 45
const tinyEngineContext = 64 // EngineConfig's PrefillChunk too

// fakeKernelLaunches is the fake driver's cuLaunchKernel count so far.
func fakeKernelLaunches(t *testing.T) int {
	t.Helper()
	d, err := cuda.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cudatest.Counters(d.ErrorName(cuda.Result(cudatest.Trace)))
	if err != nil {
		t.Fatal(err)
	}
	return m["launches"]
}

// launchIteration runs one engine iteration and returns its launches by
// exec/cuda's LaunchStats and by the fake driver's kernel counter.
func launchIteration(t *testing.T, ex *PassExecutor, batch []Scheduled) (all, kernels int) {
	t.Helper()
	c, ok := ex.c.(*xcuda.Compute)
	if !ok {
		t.Fatalf("the engine's Compute is %T, want exec/cuda's", ex.c)
	}
	a0, k0 := c.LaunchStats().Launches, fakeKernelLaunches(t)
	if err := ex.Run(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	return int(c.LaunchStats().Launches - a0), fakeKernelLaunches(t) - k0
}

func newSeqs(n int) []Seq {
	s := make([]Seq, n)
	for i := range s {
		s[i] = Seq{Req: Request{ID: 100 + i, InputLen: 40, OutputLen: 8}}
	}
	return s
}

type launchCase struct {
	name        string
	batch       []Scheduled
	all, kernel int
}

// checkLaunches runs each case on ex and holds the count, the engine's
// launches and the driver's kernels to the hand counts.
func checkLaunches(t *testing.T, ex *PassExecutor, n *EngineLaunches, cases []launchCase) {
	t.Helper()
	for _, c := range cases {
		got, err := n.Iteration(c.batch, ex.Batched())
		if err != nil {
			t.Fatal(err)
		}
		if got != c.all {
			t.Errorf("%s: EngineLaunches.Iteration = %d, hand count %d", c.name, got, c.all)
		}
		all, kernels := launchIteration(t, ex, c.batch)
		if all != c.all || kernels != c.kernel {
			t.Errorf("%s: the engine queued %d launches (%d kernels), hand count %d (%d)", c.name, all, kernels, c.all, c.kernel)
		}
		for _, b := range c.batch {
			if b.Sample && b.Past+b.Q >= b.Seq.Req.InputLen+b.Seq.Req.OutputLen-1 {
				ex.Released(b.Seq)
			}
		}
	}
}

// EngineLaunches counts what the engine queues: on the fake driver each
// iteration's launches (exec/cuda's LaunchStats: kernels, cuBLAS calls,
// copies, memsets) equal the count and the hand count above, and the
// driver's own cuLaunchKernel counter equals the hand count of kernels.
func TestEngineLaunchesOnFakeCUDA(t *testing.T) {
	ex, plan := fakeCUDAEngine(t, 16, tinyEngineContext)
	defer ex.Close()
	if !ex.Batched() {
		t.Fatalf("the GPU engine runs %s, want batched", ex.Mode())
	}
	n, err := NewEngineLaunches(plan)
	if err != nil {
		t.Fatal(err)
	}
	dec := decodeBatch(16, 32)
	for i := range dec {
		dec[i].Seq.Req.InputLen, dec[i].Seq.Req.OutputLen = 33+i, 1 // released after
	}
	s := newSeqs(7)
	checkLaunches(t, ex, n, []launchCase{
		// 16 decoding sequences on fresh slots: 72 + 16 × (36 + 6) = 744;
		// kernels 40 + 16 × (18 + 3) = 376.
		{"16 decodes", dec, 744, 376},
		// One pass of 20 + 30 + 3 = 53 ≤ 64 rows: a sampling prefill, a
		// prefill chunk that does not sample, 3 decodes: 72 + 5 × 36 +
		// 4 × 6 = 276; kernels 40 + 5 × 18 + 4 × 3 = 142.
		{"mixed", []Scheduled{{Seq: &s[0], Q: 20, Sample: true}, {Seq: &s[1], Q: 30, Sample: false},
			{Seq: &s[2], Q: 1, Past: 9, Sample: true}, {Seq: &s[3], Q: 1, Past: 10, Sample: true}, {Seq: &s[4], Q: 1, Past: 11, Sample: true}}, 276, 142},
		// 1 + 34 = 35 rows, then 40 more do not fit 64: two passes,
		// 2 × 72 + 3 × 36 + 2 × 6 = 264; kernels 80 + 54 + 6 = 140.
		{"two passes", []Scheduled{{Seq: &s[0], Q: 1, Past: 20, Sample: true}, {Seq: &s[1], Q: 34, Past: 30, Sample: true},
			{Seq: &s[5], Q: 40, Sample: false}}, 264, 140},
		// One decoding sequence: a pass of 1 row, fused: 57 + 36 + 6 = 99;
		// kernels 25 + 18 + 3 = 46.
		{"one decode", []Scheduled{{Seq: &s[2], Q: 1, Past: 10, Sample: true}}, 99, 46},
		// One prefill of the whole chunk, 64 rows: fused as above, and its
		// 64 queries take cuBLAS attention (attnblas.go: ≥ 64 queries in
		// fp32), per layer pb_rope_kv + 2 query heads per KV head × (2
		// strided-batched GEMMs + pb_causal_softmax) = 7 launches instead
		// of 2, kernels 3 instead of 2: 99 + 8 × 5 = 139; kernels 46 + 8 = 54.
		{"one chunk", []Scheduled{{Seq: &s[6], Q: tinyEngineContext, Sample: true}}, 139, 54},
	})
}

// Per sequence, each sequence's whole pass runs on its slot, with no copy.
func TestEngineLaunchesPerSequenceOnFakeCUDA(t *testing.T) {
	ex, plan := fakeCUDAEngine(t, 4, tinyEngineContext)
	defer ex.Close()
	ex.batched = false
	n, err := NewEngineLaunches(plan)
	if err != nil {
		t.Fatal(err)
	}
	s := newSeqs(3)
	checkLaunches(t, ex, n, []launchCase{
		// 3 decodes: 3 × 80 = 240; kernels 3 × 45 = 135.
		{"3 decodes", []Scheduled{{Seq: &s[0], Q: 1, Past: 8, Sample: true}, {Seq: &s[1], Q: 1, Past: 9, Sample: true}, {Seq: &s[2], Q: 1, Past: 10, Sample: true}}, 240, 135},
		// A prefill chunk of 20 that does not sample and a decode:
		// 91 + 80 = 171; kernels 58 + 45 = 103.
		{"chunk and decode", []Scheduled{{Seq: &s[0], Q: 20, Past: 9, Sample: false}, {Seq: &s[1], Q: 1, Past: 10, Sample: true}}, 171, 103},
	})
}
