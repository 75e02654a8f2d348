package cuda

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// TestGenSegmentsMatchGenerator: every tensor of every rank of these
// plans, written by its pb_gen segments (genApply, the Go statement of the
// kernel), equals model.Generator's bit for bit. The plans cover dense
// and gated MLPs, TP shards of every split tensor, pipeline stages,
// vocabulary shards with padding, biases, LayerNorm, learned positions
// and a tied LM head.
func TestGenSegmentsMatchGenerator(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range []string{"test/single-tiny", "test/tp2pp2-tiny", "test/gpt2-tiny", "test/tp4-tiny", "padded"} {
		var plan *partition.Plan
		if name == "padded" { // tp4-tiny with a vocabulary of 90: shards of 23 rows, the last holding 21
			cfg, err := configs.Load("test/tp4-tiny")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Model.Vocab = 90
			if plan, err = partition.NewPlan(cfg); err != nil {
				t.Fatal(err)
			}
		} else {
			plan = tinyPlan(t, name)
		}
		for rank := range plan.Ranks {
			gen := plan.Generator(rank)
			for _, ts := range plan.Tensors(rank) {
				want, err := gen.Tensor(ts.Layer, ts.Name)
				if err != nil {
					t.Fatal(err)
				}
				segs, err := genSegments(gen, ts.Layer, ts.Name)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, want.K*want.N)
				genApply(segs, got, want.N)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want.Data[i]) {
						t.Fatalf("%s rank %d %s of layer %d [%d, %d]: element %d (row %d, column %d) = %v, the generator's %v",
							name, rank, ts.Name, ts.Layer, want.K, want.N, i, i/want.N, i%want.N, got[i], want.Data[i])
					}
				}
				seen[ts.Name] = true
				if s := gen.Shard; s.VocabOffset+s.VocabSize > s.Vocab && (ts.Name == model.Embed || ts.Name == model.LMHead) {
					seen["padded "+ts.Name] = true
				}
				if gen.Shard.Arch.Tied && ts.Name == model.LMHead {
					seen["tied "+model.LMHead] = true
				}
			}
		}
	}
	for _, n := range []string{model.WQKV, model.WO, model.WUp, model.WDown, model.AttnNorm, model.FinalNorm, model.Embed, model.LMHead,
		model.BQKV, model.BO, model.BUp, model.BDown, model.PosEmbed, model.MLPNormBias, "tied " + model.LMHead, "padded " + model.LMHead} {
		if !seen[n] {
			t.Errorf("no plan exercised %s", n)
		}
	}
	if _, err := genSegments(tinyPlan(t, "test/single-tiny").Generator(0), 0, "w_nope"); err == nil {
		t.Error("an unknown tensor has segments")
	}
}
