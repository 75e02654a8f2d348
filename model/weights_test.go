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
	nan := float32(math.NaN())
	if Argmax([]float32{1, 3, 3, 2}) != 1 || Argmax([]float32{nan, -1, nan}) != 1 {
		t.Fatal("argmax takes the first maximum and skips NaN")
	}
}
