package model

import (
	"math"
	"testing"
)

func TestUniformIsKeyed(t *testing.T) {
	base := Uniform(7, 3, "wq", 5, 9)
	if Uniform(7, 3, "wq", 5, 9) != base {
		t.Fatal("same key, different value")
	}
	for _, other := range []float32{
		Uniform(8, 3, "wq", 5, 9), Uniform(7, 4, "wq", 5, 9), Uniform(7, 3, "wk", 5, 9),
		Uniform(7, 3, "wq", 6, 9), Uniform(7, 3, "wq", 5, 10), Uniform(7, 3, "wq", 9, 5),
	} {
		if other == base {
			t.Fatalf("a different key gave the same value %g", base)
		}
	}
	// Uniform on [−1, 1): mean 0, variance 1/3; over 20000 draws the standard
	// error of the mean is √(1/3/20000) ≈ 0.004.
	var sum, sq float64
	const n = 20000
	for i := 0; i < n; i++ {
		v := float64(Uniform(1, 0, "w", i/100, i%100))
		if v < -1 || v >= 1 {
			t.Fatalf("value %g outside [−1, 1)", v)
		}
		sum += v
		sq += v * v
	}
	if mean, vr := sum/n, sq/n-(sum/n)*(sum/n); math.Abs(mean) > 0.02 || math.Abs(vr-1.0/3) > 0.02 {
		t.Fatalf("mean %g variance %g, want 0 and 1/3", mean, vr)
	}
	for seq := 0; seq < 4; seq++ {
		for pos := 0; pos < 50; pos++ {
			tok := PromptToken(7, seq, pos, 96)
			if tok < 0 || tok >= 96 || tok != PromptToken(7, seq, pos, 96) {
				t.Fatalf("prompt token %d of seq %d pos %d", tok, seq, pos)
			}
		}
	}
}

// logitsByVocabByID is LogitsByVocab by its definition, id by id: id v of
// sequence i is element v mod vl of sequence i's row of shard v / vl.
func logitsByVocabByID(gathered []float32, seqs, vp, vocab, T int) []float32 {
	vl := vp / T
	out := make([]float32, seqs*vocab)
	for i := 0; i < seqs; i++ {
		for v := 0; v < vocab; v++ {
			out[i*vocab+v] = gathered[(v/vl*seqs+i)*vl+v%vl]
		}
	}
	return out
}

// The sampler's reorder at a Llama vocabulary (32000 ids over 2 shards, 16
// sequences), id by id against shard runs copied: compare the two in one
// run (go test -bench LogitsByVocab ./model).
func BenchmarkLogitsByVocab(b *testing.B) {
	const seqs, vocab, T = 16, 32000, 2
	g := make([]float32, seqs*vocab)
	dst := make([]float32, seqs*vocab)
	b.Run("by-id", func(b *testing.B) {
		for b.Loop() {
			_ = logitsByVocabByID(g, seqs, vocab, vocab, T)
		}
	})
	b.Run("into", func(b *testing.B) {
		for b.Loop() {
			LogitsByVocabInto(dst, g, seqs, vocab, vocab, T)
		}
	})
}

func TestLogitsByVocabAndArgmax(t *testing.T) {
	// T = 2 shards of 3 (vp = 6, vocab 5), 2 sequences: gathered is
	// [shard 0: seq0 v0..2, seq1 v0..2][shard 1: seq0 v3..5, seq1 v3..5].
	g := []float32{0, 1, 2, 10, 11, 12, 3, 4, 99, 13, 14, 98}
	got := LogitsByVocab(g, 2, 6, 5, 2)
	want := []float32{0, 1, 2, 3, 4, 10, 11, 12, 13, 14}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reordered %v, want %v (padded ids 5 dropped)", got, want)
		}
	}
	// Against the element-by-element definition (id v of sequence i is
	// element v mod vl of shard v / vl) over shard counts, padding and
	// sequence counts, into a reused buffer.
	for _, c := range []struct{ seqs, vp, vocab, T int }{{1, 8, 8, 1}, {3, 12, 10, 4}, {4, 96, 96, 2}, {2, 64, 50, 4}, {5, 30, 1, 3}} {
		vl := c.vp / c.T
		g := make([]float32, c.T*c.seqs*vl)
		for k := range g {
			g[k] = float32(k*7%31) - 15
		}
		dst := make([]float32, c.seqs*c.vocab)
		for k := range dst {
			dst[k] = float32(math.NaN()) // every element must be written
		}
		LogitsByVocabInto(dst, g, c.seqs, c.vp, c.vocab, c.T)
		want := logitsByVocabByID(g, c.seqs, c.vp, c.vocab, c.T)
		for k := range want {
			if dst[k] != want[k] {
				t.Fatalf("%+v: element %d (seq %d, id %d) = %v, want %v", c, k, k/c.vocab, k%c.vocab, dst[k], want[k])
			}
		}
	}
	nan := float32(math.NaN())
	if Argmax([]float32{1, 3, 3, 2}) != 1 || Argmax([]float32{nan, -1, nan}) != 1 {
		t.Fatal("argmax takes the first maximum and skips NaN")
	}
}
