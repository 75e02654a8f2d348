package cpu

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func newPlan(t *testing.T, name string, edit func(*configs.Config)) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func newCompute(t *testing.T, plan *partition.Plan, rank int) *Compute {
	t.Helper()
	c, err := New(plan, rank)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// at is element (r, c) of a row-major [k][n] matrix.
func at(w []float32, n, r, c int) float32 { return w[r*n+c] }

// TestShardsAreSlicesOfTheFullModel: every TP=2 shard (tp2pp2-tiny) equals
// the Megatron slice of the TP=1 tensors (single-tiny: the same model and
// seed). Model: hidden 64, 8 heads and 4 kv heads of 8, ffn 128 gated,
// vocab 95 here (padded to 96 for TP=2, so the last id of shard 1 is padding).
func TestShardsAreSlicesOfTheFullModel(t *testing.T) {
	odd := func(c *configs.Config) { c.Model.Vocab = 95 }
	full := newPlan(t, "test/single-tiny", odd)
	split := newPlan(t, "test/tp2pp2-tiny", odd)
	if split.VocabPadded != 96 || full.VocabPadded != 95 {
		t.Fatalf("padded vocab %d and %d, want 96 and 95", split.VocabPadded, full.VocabPadded)
	}
	ref := newCompute(t, full, 0)
	const H, hd, ffn, V = 64, 8, 128, 95
	const qW, kvW = 8 * hd, 4 * hd // full widths of q and of k (= v)
	for _, rank := range []int{0, 1, 2, 3} {
		c := newCompute(t, split, rank)
		tp := split.Ranks[rank].TPIndex
		for _, l := range split.Ranks[rank].Layers {
			// wqkv: [q heads 4t..4t+3 | k heads 2t, 2t+1 | v heads 2t, 2t+1].
			fw, sw := ref.Weight(l, "wqkv"), c.Weight(l, "wqkv")
			const fn, sn = qW + 2*kvW, qW/2 + kvW
			for r := 0; r < H; r++ {
				for j := 0; j < qW/2; j++ {
					if at(sw, sn, r, j) != at(fw, fn, r, tp*qW/2+j) {
						t.Fatalf("rank %d layer %d wqkv q [%d,%d]", rank, l, r, j)
					}
				}
				for j := 0; j < kvW/2; j++ {
					if at(sw, sn, r, qW/2+j) != at(fw, fn, r, qW+tp*kvW/2+j) ||
						at(sw, sn, r, qW/2+kvW/2+j) != at(fw, fn, r, qW+kvW+tp*kvW/2+j) {
						t.Fatalf("rank %d layer %d wqkv k/v [%d,%d]", rank, l, r, j)
					}
				}
			}
			// wo and w_down: row slices.
			for _, rows := range []struct {
				name string
				n    int
			}{{"wo", qW / 2}, {"w_down", ffn / 2}} {
				fw, sw := ref.Weight(l, rows.name), c.Weight(l, rows.name)
				for i := range sw {
					if sw[i] != fw[tp*rows.n*H+i] {
						t.Fatalf("rank %d layer %d %s element %d", rank, l, rows.name, i)
					}
				}
			}
			// w_up: [gate cols 64t.. | up cols 64t..] of full [gate 128 | up 128].
			fw, sw = ref.Weight(l, "w_up"), c.Weight(l, "w_up")
			for r := 0; r < H; r++ {
				for j := 0; j < ffn/2; j++ {
					if at(sw, ffn, r, j) != at(fw, 2*ffn, r, tp*ffn/2+j) || at(sw, ffn, r, ffn/2+j) != at(fw, 2*ffn, r, ffn+tp*ffn/2+j) {
						t.Fatalf("rank %d layer %d w_up [%d,%d]", rank, l, r, j)
					}
				}
			}
			for _, norm := range []string{"attn_norm", "mlp_norm"} {
				fw, sw := ref.Weight(l, norm), c.Weight(l, norm)
				for i := range fw {
					if fw[i] != sw[i] || math.Abs(float64(fw[i])-1) > 0.1 {
						t.Fatalf("rank %d layer %d %s[%d] = %g, full %g", rank, l, norm, i, sw[i], fw[i])
					}
				}
			}
		}
		// Embedding rows 48t..48t+47, zero at the padded id 95.
		if sw := c.Weight(-1, "embed"); sw != nil {
			fw := ref.Weight(-1, "embed")
			for v := 0; v < 48; v++ {
				for j := 0; j < H; j++ {
					want := float32(0)
					if id := tp*48 + v; id < V {
						want = fw[id*H+j]
					}
					if sw[v*H+j] != want {
						t.Fatalf("rank %d embed row %d col %d: %g, want %g", rank, v, j, sw[v*H+j], want)
					}
				}
			}
		} else if split.Ranks[rank].Stage == 0 {
			t.Fatalf("first-stage rank %d holds no embedding", rank)
		}
		// LM head columns 48t..48t+47, zero at the padded id.
		if sw := c.Weight(-1, "lm_head"); sw != nil {
			fw := ref.Weight(-1, "lm_head")
			for r := 0; r < H; r++ {
				for j := 0; j < 48; j++ {
					want := float32(0)
					if id := tp*48 + j; id < V {
						want = fw[r*V+id]
					}
					if sw[r*48+j] != want {
						t.Fatalf("rank %d lm_head [%d,%d]: %g, want %g", rank, r, j, sw[r*48+j], want)
					}
				}
			}
		} else if split.Ranks[rank].Stage == 1 {
			t.Fatalf("last-stage rank %d holds no LM head", rank)
		}
	}
	// Scale: wq entries lie in [−1/√64, 1/√64].
	for _, v := range ref.Weight(0, "wqkv") {
		if math.Abs(float64(v)) > 1.0/8 {
			t.Fatalf("wqkv entry %g beyond 1/√hidden", v)
		}
	}
}
