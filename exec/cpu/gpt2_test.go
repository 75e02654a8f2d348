package cpu

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/partition"
)

// gpt2Tiny turns tp2pp2-tiny into a seeded GPT-2-style model: LayerNorm
// with bias, biases on every linear, learned positions, tanh-GELU, tied
// LM head (8 heads of 8, kv_heads = heads).
func gpt2Tiny(c *configs.Config) {
	c.Model.Arch, c.Model.GatedMLP, c.Model.KVHeads, c.Model.MaxPositions = configs.ArchGPT2, false, 8, 32
}

// TestSeededGPT2PartitioningsMatchReference: the seeded GPT-2-style model
// under TP=2 × PP=2 (row-parallel biases added by TP index 0 before the
// all-reduce, the tied head's vocabulary shards, positions after the
// embedding's all-reduce) equals the single-rank reference, and counted
// communication equals the Program's.
func TestSeededGPT2PartitioningsMatchReference(t *testing.T) {
	plan := newPlan(t, "test/tp2pp2-tiny", gpt2Tiny)
	res, err := pexec.Check(context.Background(), plan.Config, pexec.CheckOptions{
		NewCompute: func(p *partition.Plan, r int) (pexec.Compute, error) { return New(p, r) },
		NewComms:   localcomm.Comms,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if res.ArgmaxCompared == 0 {
		t.Fatal("nothing compared")
	}
	// The tied head is the embedding transposed: rank 3 (stage 1, TP 1)
	// holds vocabulary ids 48..95 as columns, rank 1 (stage 0, TP 1) as rows.
	emb, head := newCompute(t, plan, 1).Weight(-1, "embed"), newCompute(t, plan, 3).Weight(-1, "lm_head")
	const H, vl = 64, 48
	for v := 0; v < vl; v++ {
		for c := 0; c < H; c++ {
			if emb[v*H+c] != head[c*vl+v] {
				t.Fatalf("lm_head[%d][%d] = %g, embed[%d][%d] = %g", c, v, head[c*vl+v], v, c, emb[v*H+c])
			}
		}
	}
	if b := newCompute(t, plan, 1).Weight(0, "b_o"); b != nil {
		t.Fatal("TP index 1 holds the row-parallel bias b_o: the all-reduce would add it twice")
	}
}

func TestLayerNormAndBias(t *testing.T) {
	// Row [1, 2, 3, 4]: mean 2.5, variance 1.25; weight 2, bias 1:
	// out_i = (x_i − 2.5)/√(1.25 + ε)·2 + 1.
	x := []float32{1, 2, 3, 4}
	out := make([]float32, 4)
	layerNorm(x, out, []float32{2, 2, 2, 2}, []float32{1, 1, 1, 1}, 1, 1e-5)
	for i, v := range x {
		if want := (float64(v)-2.5)/math.Sqrt(1.25+1e-5)*2 + 1; !close32(out[i], want, 1e-6) {
			t.Fatalf("elem %d: %g, want %g", i, out[i], want)
		}
	}
	y := []float32{1, 2, 3, 4, 5, 6}
	addBias(y, []float32{10, 20, 30}, 2)
	if y[0] != 11 || y[2] != 33 || y[3] != 14 || y[5] != 36 {
		t.Fatalf("bias added %v", y)
	}
}

// TestBidirectionalAttention: with bidirectional set (encoder) every query
// of the pass attends to all q positions, so the first query's output
// depends on the last token; causally it does not. Without rotary (θ 0)
// and one head of dimension 2, query 0 with all-equal scores (q = 0) gets
// the mean of the values.
func TestBidirectionalAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	s := attnShape{seqs: 1, q: 3, hl: 1, kvl: 1, hd: 2, bidirectional: true}
	qkv := randVec(rng, 3*6)
	copy(qkv[0:2], []float32{0, 0}) // query 0 is zero: uniform weights
	vals := [][]float32{qkv[4:6], qkv[10:12], qkv[16:18]}
	want := []float64{
		(float64(vals[0][0]) + float64(vals[1][0]) + float64(vals[2][0])) / 3,
		(float64(vals[0][1]) + float64(vals[1][1]) + float64(vals[2][1])) / 3,
	}
	causal := append([]float32(nil), qkv...)
	ao := make([]float32, 3*2)
	attention(qkv, ao, newKVCache(1, 4, 2), s)
	for e := range want {
		if !close32(ao[e], want[e], 1e-6) {
			t.Fatalf("bidirectional query 0 elem %d: %g, want the mean of the values %g", e, ao[e], want[e])
		}
	}
	s.bidirectional = false
	attention(causal, ao, newKVCache(1, 4, 2), s)
	if ao[0] != vals[0][0] || ao[1] != vals[0][1] {
		t.Fatalf("causal query 0: %v, want its own value %v", ao[:2], vals[0])
	}
}
