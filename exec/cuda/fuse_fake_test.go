//go:build cgo

package cuda

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// On the fake driver, a residual followed by the norm that reads its
// output runs as one launch. Hand count, L layers, a final norm before
// the LM head: the pairs are L00.attn_residual → L00.mlp_norm (each
// layer), L0i.mlp_residual → L0(i+1).attn_norm (L − 1 of them) and the
// last mlp_residual → final_norm; that last pair fuses in decode (one row
// per sequence on both sides) but not in prefill, where final_norm reads
// each sequence's last row only. Fused saves 2L − 1 launches per prefill
// pass and 2L per decode step: single-tiny (RMSNorm, L = 8) 15 and 16,
// gpt2-tiny (LayerNorm with bias, L = 2) 3 and 4.
func TestFusedNormOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	for _, tc := range []struct {
		config                string
		layers                int
		last                  string // the last layer's mlp_residual
		prefillSaved, decSave int64
	}{
		{"test/single-tiny", 8, "L07.mlp_residual", 15, 16},
		{"test/gpt2-tiny", 2, "L01.mlp_residual", 3, 4},
	} {
		plan := tinyPlan(t, tc.config)
		if plan.Model.Layers != tc.layers {
			t.Fatalf("%s has %d layers, the count assumes %d", tc.config, plan.Model.Layers, tc.layers)
		}
		prompt := plan.Config.Workload.PromptTokens()
		var pre, dec [2]int64
		for i, without := range []string{"", "fused-norm"} {
			c := fakeCompute(t, plan, 0, Options{DType: "fp16", Without: without})
			n0 := c.LaunchStats().Launches
			preNames := runPhase(t, c, plan, partition.Prefill, 0)
			n1 := c.LaunchStats().Launches
			if err := c.ResetTimes(); err != nil { // also the launch counts
				t.Fatal(err)
			}
			n2 := c.LaunchStats().Launches
			decNames := runPhase(t, c, plan, partition.Decode, prompt)
			pre[i], dec[i] = n1-n0, c.LaunchStats().Launches-n2
			fused := without == ""
			for _, e := range []struct {
				names []string
				name  string
				want  bool
			}{
				{preNames, "L00.attn_residual [+L00.mlp_norm]", fused},
				{preNames, "L00.mlp_norm [in L00.attn_residual]", fused},
				{preNames, "L00.mlp_residual [+L01.attn_norm]", fused},
				{preNames, "final_norm", true},
				{preNames, tc.last, true},
				{decNames, tc.last + " [+final_norm]", fused},
				{decNames, "final_norm [in " + tc.last + "]", fused},
				{decNames, "L00.attn_norm", true}, // after the input op: nothing to fuse with
			} {
				if got := slices.Contains(e.names, e.name); got != e.want {
					t.Errorf("%s, Without %q: timing entry %q present %v, want %v (entries %s)", tc.config, without, e.name, got, e.want, strings.Join(e.names, ", "))
				}
			}
		}
		if d := pre[1] - pre[0]; d != tc.prefillSaved {
			t.Errorf("%s prefill: %d launches fused, %d unfused: %d saved, want %d", tc.config, pre[0], pre[1], d, tc.prefillSaved)
		}
		if d := dec[1] - dec[0]; d != tc.decSave {
			t.Errorf("%s decode: %d launches fused, %d unfused: %d saved, want %d", tc.config, dec[0], dec[1], d, tc.decSave)
		}
	}
}

// A norm runs on its own unless it is the very next op after the residual
// that fused it: a caller that runs another op in between (or the norm
// twice) gets the norm launched, so the fusion never skips a norm whose
// input may have changed.
func TestFusedNormOutOfOrderOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/single-tiny")
	c := fakeCompute(t, plan, 0, Options{DType: "fp16"})
	prog := plan.Program(0, partition.Prefill)
	get := func(name string) *partition.Op { return opNamed(t, prog, name) }
	res, norm, other := get("L00.attn_residual"), get("L00.mlp_norm"), get("L01.attn_norm")
	// Launches per op, in order: residual fused (1), its norm (0), the
	// norm again (1: the mark went with the first), residual (1), another
	// norm (1: not the fused one), the fused norm after it (1).
	expectLaunches(t, c, []launchStep{{res, 1}, {norm, 0}, {norm, 1}, {res, 1}, {other, 1}, {norm, 1}})
}

// On the fake driver the decode breakdown (decode_bytes_test.go) runs its
// three variants on single-tiny (fp16, 8 output tokens: the prefill, 3
// warm-up and 3 measured steps fit the context): every op of the decode
// step has a timing entry op by op, and the graph variants' measured
// steps are one replayed graph each.
func TestDecodeBreakdownOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workload.OutputTokens = 8
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	decodeBreakdown(t, plan, cfg.Workload.Batch, "fp16")
}

// The GEMM layout probe (decode_bytes_test.go) on the fake driver and
// cuBLAS, on small shapes: both layouts are accepted and timed.
func TestGemmLayoutsOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	c := fakeCompute(t, tinyPlan(t, "test/single-tiny"), 0, Options{DType: "fp16", NoTiming: true})
	table := gemmLayouts(t, c, []gemmShape{{"a", 64, 96}, {"b", 128, 64}}, []int{1, 16})
	if n := strings.Count(table, "\n"); n != 1+2*2*2 {
		t.Errorf("%d lines, want a header and 8 rows:\n%s", n, table)
	}
}

// Fusion across the ranks of tp2pp2-tiny (8 layers, 2 stages of 4, two
// micro-batches): the all-reduce after each row-parallel GEMM comes before
// the residual, so the residual and the norm after it stay adjacent; a
// stage's last residual is followed by its send (stage 0) or, on the last
// stage, by the final norm. Hand count per micro-batch and step: stage 0
// fuses attn_residual → mlp_norm in its 4 layers and mlp_residual → next
// attn_norm in 3: 7 (prefill and decode alike); stage 1 fuses the same 7
// and, in decode only, L07.mlp_residual → final_norm: 7 in prefill, 8 in
// decode. Two micro-batches double each.
func TestFusedNormAcrossRanksOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/tp2pp2-tiny")
	for _, tc := range []struct {
		rank                 int
		prefillSaved, decode int64
	}{
		{0, 14, 14}, // stage 0, TP index 0
		{3, 14, 16}, // stage 1, TP index 1
	} {
		var pre, dec [2]int64
		for i, without := range []string{"", "fused-norm"} {
			c := fakeCompute(t, plan, tc.rank, Options{DType: "fp16", Without: without})
			for _, ph := range []struct {
				phase partition.Phase
				past  int
				into  *int64
			}{{partition.Prefill, 0, &pre[i]}, {partition.Decode, plan.Config.Workload.PromptTokens(), &dec[i]}} {
				if err := c.ResetTimes(); err != nil {
					t.Fatal(err)
				}
				prog := plan.Program(tc.rank, ph.phase)
				for j := range prog.Ops {
					op := &prog.Ops[j]
					if _, comm := op.Kind.Comm(); comm {
						continue
					}
					if err := c.Exec(context.Background(), op, ph.past); err != nil {
						t.Fatalf("rank %d %s: %v", tc.rank, op.Name, err)
					}
				}
				*ph.into = c.LaunchStats().Launches
			}
		}
		if d := pre[1] - pre[0]; d != tc.prefillSaved {
			t.Errorf("rank %d prefill: %d launches saved, want %d", tc.rank, d, tc.prefillSaved)
		}
		if d := dec[1] - dec[0]; d != tc.decode {
			t.Errorf("rank %d decode: %d launches saved, want %d", tc.rank, d, tc.decode)
		}
	}
}

// attnBlasPlan is single-tiny with one layer, 8 query heads over 4 KV
// heads of 8 (two per group), batch 2, context 80: a prefill of 76
// queries per sequence, which fp32 cannot run on the flash kernel.
func attnBlasPlan(t *testing.T) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.Layers = 1
	cfg.Workload.Batch, cfg.Workload.Context, cfg.Workload.OutputTokens = 2, 80, 4
	cfg.Parallel.Microbatches = 1
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// On the fakes (whose cuBLAS computes fp32 products on host memory and
// whose kernels compute nothing) the cuBLAS prefill attention's two GEMMs
// are checked against products written out here: with P planted in the
// workspace (the fake softmax leaves it), every output row is P·V of its
// sequence and KV head, and the scores left by the last (sequence, group
// position) are scale·Q·Kᵀ of that sequence's query heads 1, 3, 5, 7.
// fp16 at head dim 128 runs on the flash kernel; decode stays on
// pb_attention_vV; Without cublas-attention keeps pb_attention_vV.
func TestBlasAttentionOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := attnBlasPlan(t)
	prog := plan.Program(0, partition.Prefill)
	var op *partition.Op
	for i := range prog.Ops {
		if prog.Ops[i].Kind == partition.Attention {
			op = &prog.Ops[i]
		}
	}
	q, hl, kvl, hd, seqs, ctx := op.QLen, op.Heads, op.KVHeads, op.HeadDim, op.Seqs, plan.Config.Workload.Context
	if q != 76 || hl != 8 || kvl != 4 || hd != 8 || seqs != 2 || ctx != 80 {
		t.Fatalf("shape q %d hl %d kvl %d hd %d seqs %d ctx %d, the test assumes 76, 8, 4, 8, 2, 80", q, hl, kvl, hd, seqs, ctx)
	}
	c := fakeCompute(t, plan, 0, Options{DType: "fp32"})
	if !c.usesBlasAttn(op) || c.opTag(op) != " [cublas]" {
		t.Fatalf("fp32 prefill of 76 queries: cuBLAS %v, tag %q", c.usesBlasAttn(op), c.opTag(op))
	}
	// Workspace: kvl·q·ctx = 4·76·80 = 24,320 scores, fp32 S (97,280 B,
	// already a multiple of 256) then fp32 P (97,280 B).
	if c.blasAttn.elems != 24320 || c.blasAttn.p-c.blasAttn.s != 97280 {
		t.Errorf("workspace %d scores, P at +%d", c.blasAttn.elems, c.blasAttn.p-c.blasAttn.s)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.IntN(9) - 4) // small integers: every product and sum exact in fp32
		}
		return v
	}
	W, kvw := (hl+2*kvl)*hd, kvl*hd
	qkv := vals(seqs * q * W)
	kc, vc := vals(2*ctx*kvw), vals(2*ctx*kvw) // the cache of both sequences (seq0 = 0)
	P := vals(kvl * q * q)                     // [b][i][p], n = q keys (past 0)
	in, err := c.Buffer(op.In, 0, len(qkv))
	if err != nil {
		t.Fatal(err)
	}
	if err := in.(*Buffer).WriteF32(qkv); err != nil {
		t.Fatal(err)
	}
	err = c.Do(func() error {
		for _, w := range []struct {
			p cuda.DevicePtr
			v []float32
		}{{c.kv[op.Layer].k, kc}, {c.kv[op.Layer].v, vc}, {c.blasAttn.p, P}} {
			if err := c.drv.CopyHtoD(w.p, cuda.Bytes(w.v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(context.Background(), op, 0); err != nil {
		t.Fatal(err)
	}
	out, err := c.Buffer(op.Out, 0, seqs*q*hl*hd)
	if err != nil {
		t.Fatal(err)
	}
	ao, err := out.(*Buffer).ReadF32()
	if err != nil {
		t.Fatal(err)
	}
	g := hl / kvl
	for s := 0; s < seqs; s++ {
		for i := 0; i < q; i++ {
			for h := 0; h < hl; h++ {
				b := h / g
				for d := 0; d < hd; d++ {
					var want float32
					for p := 0; p < q; p++ {
						want += P[(b*q+i)*q+p] * vc[(s*ctx+p)*kvw+b*hd+d]
					}
					if got := ao[(s*q+i)*hl*hd+h*hd+d]; got != want {
						t.Fatalf("seq %d query %d head %d dim %d: %v, want Σ P·V = %v", s, i, h, d, got, want)
					}
				}
			}
		}
	}
	S := make([]float32, kvl*q*q)
	if err := c.Do(func() error { return c.drv.CopyDtoH(cuda.Bytes(S), c.blasAttn.s) }); err != nil {
		t.Fatal(err)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	s, gi := seqs-1, g-1
	for b := 0; b < kvl; b++ {
		for i := 0; i < q; i++ {
			for p := 0; p < q; p++ {
				var dot float32
				for d := 0; d < hd; d++ {
					dot += qkv[(s*q+i)*W+(b*g+gi)*hd+d] * kc[(s*ctx+p)*kvw+b*hd+d]
				}
				if got, want := S[(b*q+i)*q+p], scale*dot; got != want {
					t.Fatalf("score of KV head %d query %d key %d: %v, want scale·q·k = %v", b, i, p, got, want)
				}
			}
		}
	}
	dec := plan.Program(0, partition.Decode)
	for i := range dec.Ops {
		if d := &dec.Ops[i]; d.Kind == partition.Attention && (c.usesBlasAttn(d) || c.opTag(d) == " [cublas]") {
			t.Error("a decode step chose cuBLAS")
		}
	}
	// fp16 at head dim 8 (no flash kernel) takes cuBLAS too; at head dim
	// 128 the flash kernel.
	if f := fakeCompute(t, plan, 0, Options{DType: "fp16"}); !f.usesBlasAttn(op) {
		t.Errorf("fp16 at head dim 8: %q, want cuBLAS", f.opTag(op))
	}
	fp := flashPlan(t, 128)
	fprog := fp.Program(0, partition.Prefill)
	for i := range fprog.Ops {
		if a := &fprog.Ops[i]; a.Kind == partition.Attention {
			if f := fakeCompute(t, fp, 0, Options{DType: "fp16"}); f.usesBlasAttn(a) || !strings.HasPrefix(f.opTag(a), " [flash") {
				t.Errorf("fp16 at head dim 128: %q, want the flash kernel", f.opTag(a))
			}
		}
	}
	if w := fakeCompute(t, plan, 0, Options{DType: "fp32", Without: "cublas-attention"}); w.usesBlasAttn(op) || w.blasAttn.elems != 0 {
		t.Error("Without cublas-attention still chose cuBLAS")
	}
}
