package model

import "math"

// LogitsByVocab reorders gathered logits, laid out [T][seqs][vp/T] (the TP
// ranks' shards in rank order), to [seqs][vocab], dropping padded ids.
func LogitsByVocab(gathered []float32, seqs, vp, vocab, T int) []float32 {
	out := make([]float32, seqs*vocab)
	LogitsByVocabInto(out, gathered, seqs, vp, vocab, T)
	return out
}

// LogitsByVocabInto is LogitsByVocab into dst (seqs·vocab elements): each
// sequence's row a copy of each shard's run of ids, no division per id (a
// sampler runs it every step over the whole vocabulary).
func LogitsByVocabInto(dst, gathered []float32, seqs, vp, vocab, T int) {
	vl := vp / T
	for i := 0; i < seqs; i++ {
		row := dst[i*vocab : (i+1)*vocab]
		for t := 0; t < T && t*vl < vocab; t++ {
			n := min(vl, vocab-t*vl)
			src := (t*seqs + i) * vl
			copy(row[t*vl:t*vl+n], gathered[src:src+n])
		}
	}
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
