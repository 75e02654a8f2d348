package partition

import (
	"testing"

	"github.com/partbench/partbench/configs"
)

func seedModel(t *testing.T) *configs.Config {
	t.Helper()
	c, err := configs.Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSeedLayerArithmetic(t *testing.T) {
	m := seedModel(t).Model
	p := Layer(m)
	// Attention: 4 × 4096 × 4096 = 67,108,864 (Q, K, V, O all 4096 wide).
	if got := p.QKV + p.O; got != 67_108_864 {
		t.Errorf("attention params %d, want 67,108,864", got)
	}
	// MLP: 3 × 4096 × 16384 = 201,326,592 (gate, up, down).
	if got := p.Up + p.Down; got != 201_326_592 {
		t.Errorf("mlp params %d, want 201,326,592", got)
	}
	// Norms: 2 × 4096 = 8,192; total 67,108,864 + 201,326,592 + 8,192 = 268,443,648.
	if p.Norms != 8192 || p.Total() != 268_443_648 {
		t.Errorf("norms %d total %d, want 8,192 and 268,443,648", p.Norms, p.Total())
	}
	// In fp16 that is 2 × 268,443,648 = 536,887,296 bytes: the seed's "268.4 MB"
	// is a parameter count, not bytes.
	if got := p.Total() * int64(DTypeBytes(m.DType)); got != 536_887_296 {
		t.Errorf("layer bytes %d, want 536,887,296", got)
	}
	// KV cache per layer: 2 (K,V) × 128 seqs × 10,000 tokens × 32 heads × 128 × 2 B
	// = 2 × 128 × 10,000 × 4,096 × 2 = 20,971,520,000 bytes.
	if got := KVBytesPerLayer(m, 128, 10000); got != 20_971_520_000 {
		t.Errorf("KV per layer %d, want 20,971,520,000", got)
	}
	// The whole seed model: 16 × 268,443,648 = 4,295,098,368 parameters.
	if got := ParamsTotal(m); got != 4_295_098_368 {
		t.Errorf("params total %d, want 4,295,098,368", got)
	}
	// With embeddings and LM head: + 50257·4096 (embed) + 4096 (final norm) + 4096·50257 (head)
	// = 4,295,098,368 + 205,852,672 + 4,096 + 205,852,672 = 4,706,807,808.
	m.Embeddings, m.LMHead = true, true
	if got := ParamsTotal(m); got != 4_706_807_808 {
		t.Errorf("params with embeddings %d, want 4,706,807,808", got)
	}
	// 50257 padded to a multiple of 8: 6283 × 8 = 50264.
	if got := PaddedVocab(m, 8); got != 50264 {
		t.Errorf("padded vocab %d, want 50264", got)
	}
}
