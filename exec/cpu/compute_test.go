package cpu

import (
	"context"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// runSingle runs a one-rank Program (no communication ops) on c.
func runSingle(t *testing.T, c *Compute, plan *partition.Plan, phase partition.Phase, step int) {
	t.Helper()
	prog := plan.Program(0, phase)
	past := pexec.Past(plan, phase, step)
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if _, comm := op.Kind.Comm(); comm {
			t.Fatalf("single-rank program has communication op %s", op.Name)
		}
		if err := c.Exec(context.Background(), op, past(op)); err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
	}
}

// TestDecodeWithCacheEqualsRecompute: prefill of the 20-token prompt and one
// decode step at position 20 (teacher-forced input PromptToken(20)) must give
// the output of a prefill over the 21-token prompt whose last token is that
// same PromptToken(20) — with the LM head (logits) and without (hidden
// states), and with the longer prompt prefilled in chunks of 8, 8 and 5.
func TestDecodeWithCacheEqualsRecompute(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(*configs.Model)
		chunk int
	}{
		{"lm-head", func(*configs.Model) {}, 0},
		{"lm-head-chunked", func(*configs.Model) {}, 8},
		{"hidden-synthetic", func(m *configs.Model) { m.Embeddings, m.LMHead, m.GatedMLP = false, false, false }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cached := newPlan(t, "test/single-tiny", func(c *configs.Config) { tc.model(&c.Model) })
			whole := newPlan(t, "test/single-tiny", func(c *configs.Config) {
				tc.model(&c.Model)
				c.Workload.OutputTokens-- // prompt 21
				c.Parallel.PrefillChunk = tc.chunk
			})
			if whole.PrefillChunks != map[int]int{0: 1, 8: 3}[tc.chunk] {
				t.Fatalf("prefill in %d chunks", whole.PrefillChunks)
			}
			a, b := newCompute(t, cached, 0), newCompute(t, whole, 0)
			runSingle(t, a, cached, partition.Prefill, 0)
			afterPrefill := a.Output(0)
			runSingle(t, a, cached, partition.Decode, 0)
			runSingle(t, b, whole, partition.Prefill, 0)
			got, want := a.Output(0), b.Output(0)
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("outputs of %d and %d elements", len(got), len(want))
			}
			var maxErr, moved float64
			for i := range got {
				maxErr = math.Max(maxErr, math.Abs(float64(got[i]-want[i])))
				moved = math.Max(moved, math.Abs(float64(got[i]-afterPrefill[i])))
			}
			if maxErr > 1e-5 {
				t.Fatalf("decode with cache differs from recompute by %g", maxErr)
			}
			if moved < 1e-2 {
				t.Fatalf("decode output moved only %g from prefill's: the step did nothing", moved)
			}
			if s, w := a.Sampled(0), b.Sampled(0); len(s) != len(w) {
				t.Fatalf("sampled %v, recompute %v", s, w)
			} else {
				for i := range s {
					if s[i] != w[i] {
						t.Fatalf("sampled %v, recompute %v", s, w)
					}
				}
			}
		})
	}
}

// TestTeacherForcing: sample feeds PromptToken at the position after the pass.
func TestTeacherForcing(t *testing.T) {
	plan := newPlan(t, "test/single-tiny", nil)
	c := newCompute(t, plan, 0)
	runSingle(t, c, plan, partition.Prefill, 0)
	tok, err := c.Buffer(model.Tokens, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range tok.(pexec.F32) {
		if want := model.PromptToken(7, i, 20, 96); int(v) != want {
			t.Fatalf("sequence %d fed %v, want PromptToken(7, %d, 20) = %d", i, v, i, want)
		}
	}
	if s := c.Sampled(0); len(s) != 4 || s[0] < 0 || s[0] >= 96 {
		t.Fatalf("sampled %v", s)
	}
}

// TestAllocatedBytes: weights and KV cache equal the plan's memory for
// every rank of tp2pp2 (fp32), and the buffers are the hand count:
// micro-batch of 2 sequences × prompt 20 = 40 rows; per row x, h, y 64 each,
// qkv (4 + 2·2)·8 = 64 and u 2·64 = 128 in one region of 128, ao 32 and a 64
// in one of 64 (partition.StorageOf) → 192 + 128 + 64 = 384 floats shared by
// the 2 micro-batches, and tokens 1 per row for each of them (2·40); the last
// stage adds logits 2·48 and gathered 2·96 = 288, shared. The plan's
// activation bytes are the same count.
func TestAllocatedBytes(t *testing.T) {
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for r, rk := range plan.Ranks {
		c := newCompute(t, plan, r)
		bufs := int64((40*384 + 2*40) * 4)
		if rk.Stage == 1 {
			bufs += 288 * 4
		}
		if got, want := c.AllocatedBytes(), rk.Memory.WeightBytes+rk.Memory.KVCacheBytes+bufs; got != want {
			t.Fatalf("rank %d allocated %d bytes, want weights %d + KV %d + buffers %d = %d",
				r, got, rk.Memory.WeightBytes, rk.Memory.KVCacheBytes, bufs, want)
		}
		if rk.Memory.ActivationBytes != bufs {
			t.Errorf("rank %d: the plan counts %d B of activations, the executor allocates %d", r, rk.Memory.ActivationBytes, bufs)
		}
	}
}

func TestBufferErrors(t *testing.T) {
	plan := newPlan(t, "test/single-tiny", nil)
	c := newCompute(t, plan, 0)
	if b, err := c.Buffer(model.X, 0, 10); err != nil || b.Len() != 10 || b.Bytes() != 40 {
		t.Fatalf("x view: %v %v", b, err)
	}
	for _, tc := range []struct {
		name      model.Buf
		mb, elems int
		want      string
	}{
		{model.Buf(99), 0, 1, `no buffer "buf(99)"`},
		{model.X, 0, 1 << 20, `buffer "x" of micro-batch 0 holds 5120 elements, 1048576 requested`},
		{model.X, 1, 1, "micro-batch 1 outside [0, 1)"},
		{model.Logits.Gathered(), 0, 1, `no buffer "logits.gathered"`}, // TP = 1 gathers nothing
	} {
		if _, err := c.Buffer(tc.name, tc.mb, tc.elems); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Buffer(%q, %d, %d): %v, want %q", tc.name, tc.mb, tc.elems, err, tc.want)
		}
	}
	// Decoding past the context is an error, not a write outside the cache.
	op := plan.Program(0, partition.Decode).Ops[0]
	if err := c.Exec(context.Background(), &op, plan.Config.Workload.Context); err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Fatalf("input at the end of the context: %v", err)
	}
}

// AllocatedByKind splits TestAllocatedBytes's total: weights and KV cache as
// the plan counts them, buffers the same hand count, nothing else.
func TestAllocatedByKind(t *testing.T) {
	var _ pexec.AllocationItemizer = (*Compute)(nil)
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for r, rk := range plan.Ranks {
		c := newCompute(t, plan, r)
		bufs := int64((40*384 + 2*40) * 4)
		if rk.Stage == 1 {
			bufs += 288 * 4
		}
		want := map[string]int64{pexec.AllocWeights: rk.Memory.WeightBytes, pexec.AllocKV: rk.Memory.KVCacheBytes, pexec.AllocBuffers: bufs}
		if got := c.AllocatedByKind(); !maps.Equal(got, want) {
			t.Errorf("rank %d: by kind %v, want %v", r, got, want)
		}
	}
}
