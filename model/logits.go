package model

import "math"

// LogitsByVocab reorders gathered logits, laid out [T][seqs][vp/T] (the TP
// ranks' shards in rank order), to [seqs][vocab], dropping padded ids.
func LogitsByVocab(gathered []float32, seqs, vp, vocab, T int) []float32 {
	vl := vp / T
	out := make([]float32, seqs*vocab)
	for i := 0; i < seqs; i++ {
		for v := 0; v < vocab; v++ {
			t, j := v/vl, v%vl
			out[i*vocab+v] = gathered[(t*seqs+i)*vl+j]
		}
	}
	return out
}

// Argmax is the index of the largest element (the first on ties); NaN
// elements are never chosen.
func Argmax(v []float32) int {
	best, bv := -1, float32(math.Inf(-1))
	for i, x := range v {
		if x > bv || best < 0 && x == bv {
			best, bv = i, x
		}
	}
	return best
}
