package partition

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

// singlePlan loads a test config and makes it single-rank (tp = pp = 1),
// as the remote modes need.
func singlePlan(t *testing.T, name string) *Plan {
	t.Helper()
	c, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	c.Parallel.TP, c.Parallel.PP, c.Parallel.LayerMap = 1, 1, nil
	c.Topology.Nodes, c.Topology.GPUsPerNode = 1, 1
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Hand derivations.
//
// test/single-tiny: 8 layers, hidden 64, 8 heads, 4 KV heads, head_dim 8,
// ffn 128 gated, vocab 96, embeddings and LM head, fp32 (4 B); batch 4,
// context 24, output 4 → prompt 20, 3 decode steps.
//
//	per layer: attn_norm 64 + wqkv 128×64 = 8,192 + wo 64×64 = 4,096
//	           + mlp_norm 64 + w_up 256×64 = 16,384 + w_down 64×128 = 8,192
//	           = 36,992 elements = 147,968 B; 8 layers = 1,183,744 B
//	embed 96×64 = 6,144 + final_norm 64 + lm_head 96×64 = 6,144 → 12,352 el = 49,408 B
//	weights = 1,233,152 B
//	KV per token per layer: 2 × 4 KV heads × 8 × 4 B = 256 B
//	KV at n tokens: 8 layers × 4 seqs × n × 256 = 8,192·n B
//	prefill: token ids 4 × 20 × 4 = 320 B; KV back at 20 = 163,840 B; sampled 4 × 4 = 16 B
//	decode step s: past 20+s: KV up 8,192·(20+s), KV down 8,192·(21+s), ids 16 B, sampled 16 B
//	logits: 4 seqs × 96 × 4 B = 1,536 B
//
// test/layerwise16-tiny at tp = pp = 1: 16 layers, hidden 64, 8 heads, 8 KV
// heads, head_dim 8, ffn 128 gated, no embedding or LM head, fp32; batch 4,
// prompt 20.
//
//	per layer: 64 + (8+16)·8×64 = 12,288 + 4,096 + 64 + 16,384 + 8,192 = 41,088 el = 164,352 B
//	weights = 16 × 164,352 = 2,629,632 B
//	KV per token per layer: 2 × 8 × 8 × 4 = 512 B; at n tokens 16 × 4 × n × 512 = 32,768·n B
func TestRemoteBytes(t *testing.T) {
	single, lw := singlePlan(t, "test/single-tiny"), singlePlan(t, "test/layerwise16-tiny")
	pre := RemoteRequest{Phase: Prefill}
	dec := func(s int) RemoteRequest { return RemoteRequest{Phase: Decode, Step: s} }
	for _, tc := range []struct {
		p      *Plan
		mode   RemoteMode
		req    RemoteRequest
		logits bool
		want   RemoteBytes
	}{
		{single, RemoteLocal, pre, false, RemoteBytes{}},
		{single, RemoteLocal, dec(1), false, RemoteBytes{}},
		{single, RemoteNaive, pre, false, RemoteBytes{UpWeights: 1_233_152, UpTokens: 320, DownKV: 163_840, DownOutputs: 16}},
		{single, RemoteNaive, dec(0), false, RemoteBytes{UpWeights: 1_233_152, UpKV: 163_840, UpTokens: 16, DownKV: 172_032, DownOutputs: 16}},
		{single, RemoteNaive, dec(2), false, RemoteBytes{UpWeights: 1_233_152, UpKV: 180_224, UpTokens: 16, DownKV: 188_416, DownOutputs: 16}},
		{single, RemoteKV, pre, false, RemoteBytes{UpTokens: 320, DownKV: 163_840, DownOutputs: 16}},
		{single, RemoteKV, dec(0), false, RemoteBytes{UpKV: 163_840, UpTokens: 16, DownKV: 172_032, DownOutputs: 16}},
		{single, RemoteStateful, pre, false, RemoteBytes{UpTokens: 320, DownOutputs: 16}},
		{single, RemoteStateful, dec(0), false, RemoteBytes{UpTokens: 16, DownOutputs: 16}},
		{single, RemoteStateful, dec(2), true, RemoteBytes{UpTokens: 16, DownOutputs: 1_536}},
		{lw, RemoteNaive, dec(1), false, RemoteBytes{UpWeights: 2_629_632, UpKV: 688_128, UpTokens: 16, DownKV: 720_896, DownOutputs: 16}},
		{lw, RemoteKV, pre, false, RemoteBytes{UpTokens: 320, DownKV: 655_360, DownOutputs: 16}},
		{lw, RemoteStateful, dec(1), false, RemoteBytes{UpTokens: 16, DownOutputs: 16}},
	} {
		got, err := tc.p.RemoteBytesOf(tc.mode, tc.req, RemoteOptions{Logits: tc.logits})
		if err != nil {
			t.Fatalf("%s %s %s/%d: %v", tc.p.Config.Name, tc.mode, tc.req.Phase, tc.req.Step, err)
		}
		if got != tc.want {
			t.Errorf("%s %s %s/%d logits=%v: got %+v, want %+v", tc.p.Config.Name, tc.mode, tc.req.Phase, tc.req.Step, tc.logits, got, tc.want)
		}
	}
}

func TestRemoteOpenAndSessionBytes(t *testing.T) {
	p := singlePlan(t, "test/single-tiny")
	for _, tc := range []struct {
		mode RemoteMode
		want int64
	}{{RemoteLocal, 0}, {RemoteNaive, 0}, {RemoteKV, 1_233_152}, {RemoteStateful, 0}} {
		got, err := p.RemoteOpenBytes(tc.mode)
		if err != nil || got != tc.want {
			t.Errorf("open bytes %s: got %d, %v; want %d", tc.mode, got, err, tc.want)
		}
	}
	// The weight list, summed, is the plan's own memory accounting of the
	// rank's weights (an independent derivation: memory.go from LayerParams).
	ws, err := p.RemoteWeights()
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, w := range ws {
		sum += w.Bytes
	}
	if sum != p.Ranks[0].Memory.WeightBytes {
		t.Errorf("weights listed %d B, plan memory holds %d B", sum, p.Ranks[0].Memory.WeightBytes)
	}
	// 8 layers × 6 tensors + embed, final_norm, lm_head.
	if len(ws) != 51 || ws[0].Name != "embed" || ws[1].Name != "L00.attn_norm" || ws[len(ws)-1].Name != "lm_head" {
		t.Errorf("weights: %d tensors, first %q, %q, last %q", len(ws), ws[0].Name, ws[1].Name, ws[len(ws)-1].Name)
	}
	sb, err := p.RemoteSessionBytes(RemoteStateful)
	if err != nil || sb != p.Ranks[0].Memory.TotalBytes || sb <= sum {
		t.Errorf("session bytes %d (%v), want the rank's total %d > weights %d", sb, err, p.Ranks[0].Memory.TotalBytes, sum)
	}
}

func TestRemotePayloadShapes(t *testing.T) {
	p := singlePlan(t, "test/single-tiny")
	pl, err := p.RemotePayloadOf(RemoteKV, RemoteRequest{Phase: Decode, Step: 1}, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 8 KV tensors then the token ids; back 8 KV tensors then sampled ids.
	if len(pl.Up) != 9 || len(pl.Down) != 9 {
		t.Fatalf("kv decode payload: %d up, %d down tensors, want 9 and 9", len(pl.Up), len(pl.Down))
	}
	for _, ts := range [][]RemoteTensor{pl.Up, pl.Down} {
		for _, x := range ts {
			n := int64(x.ElemBytes)
			for _, d := range x.Shape {
				n *= d
			}
			if n != x.Bytes {
				t.Errorf("%s: shape %v × %d B = %d, bytes %d", x.Name, x.Shape, x.ElemBytes, n, x.Bytes)
			}
		}
	}
	// KV up at past 21: [4 seqs, 21 tokens, 2 × 4 heads × 8 = 64 elements].
	if s := pl.Up[0].Shape; pl.Up[0].Name != "L00.kv" || s[0] != 4 || s[1] != 21 || s[2] != 64 {
		t.Errorf("first up tensor %s %v, want L00.kv [4 21 64]", pl.Up[0].Name, s)
	}
}

func TestRemoteErrors(t *testing.T) {
	single, lw := singlePlan(t, "test/single-tiny"), singlePlan(t, "test/layerwise16-tiny")
	multi := plan(t, "test/tp4-tiny")
	for _, tc := range []struct {
		p    *Plan
		mode RemoteMode
		req  RemoteRequest
		opts RemoteOptions
		want string
	}{
		{multi, RemoteNaive, RemoteRequest{Phase: Prefill}, RemoteOptions{}, "tp 4 × pp 1"},
		{single, "fast", RemoteRequest{Phase: Prefill}, RemoteOptions{}, `remote mode "fast"`},
		{single, RemoteNaive, RemoteRequest{Phase: Decode, Step: 3}, RemoteOptions{}, "decode step 3: must be in [0, 3)"},
		{single, RemoteNaive, RemoteRequest{Phase: "train"}, RemoteOptions{}, `phase "train"`},
		{lw, RemoteStateful, RemoteRequest{Phase: Prefill}, RemoteOptions{Logits: true}, "no LM head"},
	} {
		_, err := tc.p.RemoteBytesOf(tc.mode, tc.req, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want it to contain %q", tc.p.Config.Name, tc.mode, err, tc.want)
		}
	}
}

// TestRemoteWeightsGPT2: the GPT-2 architecture's weights are the shard's
// tensors, sized by model.Shard (the learned position table whole, every
// bias, no tied LM head), and sum to the plan's weight memory.
//
// test/gpt2-tiny (tiny-gpt2: 2 layers, hidden 2, 2 heads, head_dim 1, ffn 8,
// vocab 50,257, 1,024 positions, tied head, fp32):
//
//	per layer: attn_norm 2 + attn_norm.bias 2 + wqkv 2×6 = 12 + b_qkv 6
//	           + wo 2×2 = 4 + b_o 2 + mlp_norm 2 + mlp_norm.bias 2
//	           + w_up 2×8 = 16 + b_up 8 + w_down 8×2 = 16 + b_down 2 = 74 el
//	embed 50,257×2 = 100,514; pos_embed 1,024×2 = 2,048; final_norm 2 + bias 2
//	total 2·74 + 100,514 + 2,048 + 4 = 102,714 el (the public parameter
//	count) = 410,856 B; 12 tensors a layer → 24 + 4 = 28 tensors.
func TestRemoteWeightsGPT2(t *testing.T) {
	p := singlePlan(t, "test/gpt2-tiny")
	ws, err := p.RemoteWeights()
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	byName := map[string]RemoteTensor{}
	for _, w := range ws {
		sum += w.Bytes
		byName[w.Name] = w
	}
	if sum != 410_856 || sum != p.Ranks[0].Memory.WeightBytes {
		t.Errorf("weights %d B, want 410,856 B and the plan's weight memory %d B", sum, p.Ranks[0].Memory.WeightBytes)
	}
	if len(ws) != 28 || ws[0].Name != "embed" || ws[1].Name != "pos_embed" || ws[len(ws)-1].Name != "final_norm.bias" {
		t.Errorf("weights: %d tensors, first %q, %q, last %q; want 28, embed, pos_embed, final_norm.bias", len(ws), ws[0].Name, ws[1].Name, ws[len(ws)-1].Name)
	}
	if pe := byName["pos_embed"]; pe.Bytes != 8_192 || len(pe.Shape) != 2 || pe.Shape[0] != 1024 || pe.Shape[1] != 2 {
		t.Errorf("pos_embed %v %d B, want [1024 2] 8,192 B", pe.Shape, pe.Bytes)
	}
	if b := byName["L01.b_qkv"]; b.Bytes != 24 {
		t.Errorf("L01.b_qkv %d B, want 6 × 4 = 24 B", b.Bytes)
	}
	if _, ok := byName["lm_head"]; ok || !p.RemoteTiedHead() {
		t.Errorf("a tied LM head is shipped (%v) or not reported tied (%v)", ok, p.RemoteTiedHead())
	}
	naive, err := p.RemoteBytesOf(RemoteNaive, RemoteRequest{Phase: Decode, Step: 0}, RemoteOptions{})
	if err != nil || naive.UpWeights != 410_856 {
		t.Errorf("naive decode ships %d B of weights (%v), want 410,856", naive.UpWeights, err)
	}
}

// TestRemoteRefusesReplicas: a plan with data-parallel replicas is not the
// single rank a remote server runs (its batch is split among them).
func TestRemoteRefusesReplicas(t *testing.T) {
	c, err := configs.Load("test/tp2-dp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	c.Parallel.TP = 1
	c.Topology.Nodes, c.Topology.GPUsPerNode = 1, 2
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RemoteBytesOf(RemoteNaive, RemoteRequest{Phase: Prefill}, RemoteOptions{}); err == nil || !strings.Contains(err.Error(), "tp 1 × pp 1 × dp 2") {
		t.Errorf("a dp 2 plan: %v", err)
	}
}
