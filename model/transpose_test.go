package model

import "testing"

// Transpose moves element (r, c) of [K][N] to (c, r) of [N][K], on shapes
// below and above the parallel threshold, with partial tiles on both sides
// and a single row or column; every element is distinct, so any misplaced
// one is seen.
func TestTranspose(t *testing.T) {
	for _, sh := range [][2]int{{1, 1}, {1, 130}, {130, 1}, {3, 5}, {64, 64}, {65, 129}, {1025, 1031}, {2048, 600}} {
		K, N := sh[0], sh[1]
		in := newTensor(K, N)
		for i := range in.Data {
			in.Data[i] = float32(i)
		}
		out := Transpose(in)
		if out.K != N || out.N != K {
			t.Fatalf("%dx%d: transposed to %dx%d", K, N, out.K, out.N)
		}
		for r := 0; r < K; r++ {
			for c := 0; c < N; c++ {
				if got, want := out.Data[c*K+r], float32(r*N+c); got != want {
					t.Fatalf("%dx%d: out[%d][%d] = %v, want %v", K, N, c, r, got, want)
				}
			}
		}
	}
}

// BenchmarkTranspose is one seed-sized linear, 4096 × 11008 float32.
func BenchmarkTranspose(b *testing.B) {
	in := newTensor(4096, 11008)
	b.SetBytes(int64(2 * 4 * len(in.Data)))
	for b.Loop() {
		Transpose(in)
	}
}
