//go:build cgo

package cuda

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// The state I/O on the fake driver, whose device memory is host memory and
// whose copies and memsets really move bytes (its kernels compute nothing):
// what lands in device memory is read back with plain downloads, an
// independent path. None of this has run on a GPU.

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// ImportWeight puts the payload's bytes in the shard's device memory,
// converted to the device's type when it computes in another; a payload of
// the wrong size is refused naming the tensor.
func TestImportWeightOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/single-tiny") // fp32: the payload is float32
	for _, dt := range []string{"fp32", "fp16"} {
		c := fakeCompute(t, plan, 0, Options{DType: dt})
		w := c.frame.Weights[pexec.TensorKey{Layer: 3, Name: model.WO}] // [64, 64]
		in := make([]float32, w.k*w.n)
		for i := range in {
			in[i] = float32(i%97)/7 - 3
		}
		if err := c.ImportWeight(3, model.WO, f32Bytes(in)); err != nil {
			t.Fatal(err)
		}
		raw, err := c.download(w.p, w.k*w.n)
		if err != nil {
			t.Fatal(err)
		}
		got := c.dt.decode(raw)
		for i := range in {
			if want := dtypes[dt].round(in[i]); got[i] != want {
				t.Fatalf("%s: element %d on the device %v, want %v", dt, i, got[i], want)
			}
		}
		if err := c.ImportWeight(3, model.WO, make([]byte, 8)); err == nil || !strings.Contains(err.Error(), `tensor "wo" of layer 3 is [64, 64] fp32 = 16384 B, got 8 B`) {
			t.Errorf("%s: short weight: %v", dt, err)
		}
		if err := c.ImportWeight(3, "w_nope", nil); err == nil {
			t.Errorf("%s: an unknown tensor accepted", dt)
		}
	}
}

// ImportKV lays [seq][pos][k | v] out as the device cache's
// [seq][context][kvl·hd] keys and values, clears the positions after it, and
// ExportKV reads the same bytes back.
//
// test/single-tiny: batch 4, context 24, 4 KV heads × head_dim 8 = 32
// elements per position of keys (and of values), fp32.
func TestKVRoundTripOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/single-tiny")
	c := fakeCompute(t, plan, 0, Options{})
	const seqs, ctx, w, tokens = 4, 24, 32, 5
	// Fill the whole cache first, so clearing is visible.
	full := make([]float32, seqs*ctx*2*w)
	for i := range full {
		full[i] = 9
	}
	if err := c.ImportKV(2, ctx, f32Bytes(full)); err != nil {
		t.Fatal(err)
	}
	src := make([]float32, seqs*tokens*2*w)
	for i := range src {
		src[i] = float32(i) + 0.5
	}
	if err := c.ImportKV(2, tokens, f32Bytes(src)); err != nil {
		t.Fatal(err)
	}
	kraw, err := c.download(c.kv[2].k, seqs*ctx*w)
	if err != nil {
		t.Fatal(err)
	}
	vraw, err := c.download(c.kv[2].v, seqs*ctx*w)
	if err != nil {
		t.Fatal(err)
	}
	k, v := c.dt.decode(kraw), c.dt.decode(vraw)
	for s := 0; s < seqs; s++ {
		for p := 0; p < ctx; p++ {
			for e := 0; e < w; e++ {
				wantK, wantV := float32(0), float32(0)
				if p < tokens {
					o := ((s*tokens+p)*2*w + e)
					wantK, wantV = src[o], src[o+w]
				}
				if got := k[(s*ctx+p)*w+e]; got != wantK {
					t.Fatalf("key seq %d pos %d elem %d = %v, want %v", s, p, e, got, wantK)
				}
				if got := v[(s*ctx+p)*w+e]; got != wantV {
					t.Fatalf("value seq %d pos %d elem %d = %v, want %v", s, p, e, got, wantV)
				}
			}
		}
	}
	back := make([]byte, 4*len(src))
	if err := c.ExportKV(2, tokens, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, f32Bytes(src)) {
		t.Error("ExportKV did not return the imported cache")
	}
	if err := c.ExportKV(2, tokens, back[:8]); err == nil || !strings.Contains(err.Error(), "4 sequences × 5 positions × 2·32 fp32 = 5120 B, got 8 B") {
		t.Errorf("short export: %v", err)
	}
	if err := c.ImportKV(9, 1, nil); err == nil {
		t.Error("a layer the rank does not hold accepted")
	}
}

// SetPrompt's ids reach the tokens buffer the embedding reads (device
// copies from the uploaded prompt, in place of pb_prompt_tokens);
// WriteTokens' reach it for a decode pass; SetPrompt(nil) goes back to the
// seeded prompt kernel.
func TestPromptAndTokensOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/single-tiny") // batch 4, prompt 20, one micro-batch
	c := fakeCompute(t, plan, 0, Options{})
	prompt := make([]int32, 4*20)
	for i := range prompt {
		prompt[i] = int32((i*13 + 5) % 96)
	}
	if err := c.SetPrompt(prompt); err != nil {
		t.Fatal(err)
	}
	var input *partition.Op
	prog := plan.Program(0, partition.Prefill)
	for i := range prog.Ops {
		if prog.Ops[i].Kind == partition.Input {
			input = &prog.Ops[i]
			break
		}
	}
	if err := c.Exec(context.Background(), input, 0); err != nil {
		t.Fatal(err)
	}
	tok, err := c.Buffer(model.Tokens, 0, 80)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tok.(*Buffer).ReadF32()
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range prompt {
		if got[i] != float32(id) {
			t.Fatalf("tokens[%d] = %v, the prompt's is %d", i, got[i], id)
		}
	}
	if err := c.WriteTokens(0, []int32{7, 8, 9, 95}); err != nil {
		t.Fatal(err)
	}
	tok, _ = c.Buffer(model.Tokens, 0, 4)
	if got, _ := tok.(*Buffer).ReadF32(); got[0] != 7 || got[3] != 95 {
		t.Errorf("tokens after WriteTokens: %v", got)
	}
	if err := c.SetPrompt(prompt[:3]); err == nil || !strings.Contains(err.Error(), "want 4 sequences × 20 prompt positions = 80") {
		t.Errorf("short prompt: %v", err)
	}
	bad := append([]int32(nil), prompt...)
	bad[41] = 96
	if err := c.SetPrompt(bad); err == nil || !strings.Contains(err.Error(), "sequence 2, position 1") {
		t.Errorf("a token outside the vocabulary: %v", err)
	}
	if err := c.SetPrompt(nil); err != nil || c.promptSet {
		t.Errorf("SetPrompt(nil): %v, still set %v", err, c.promptSet)
	}
}
