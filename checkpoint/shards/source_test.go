package shards

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/model"
)

// TestCheckpointErrorsNameTensorAndFile: a tensor whose shape differs from
// the config's, and one the checkpoint lacks, are errors naming the tensor
// and where it was looked for.
func TestCheckpointErrorsNameTensorAndFile(t *testing.T) {
	dir := filepath.Join("..", "testdata", "gpt2-tiny")
	hf, w := openDir(t, dir)
	s := model.Shard{Arch: model.Arch{Norm: model.LayerNorm, Positions: model.Learned, MLP: model.GELUTanh, Bias: true, Tied: true, MaxPositions: 128},
		Hidden: 64, HeadDim: 16, Heads: 4, KVHeads: 4, FFN: 256, Vocab: 512, VocabSize: 512}
	if _, err := New(w, hf, s).Tensor(0, model.WUp); err != nil {
		t.Fatalf("the fixture's own shape: %v", err)
	}
	wrong := *hf
	wrong.FFN = 128 // c_fc is [64, 256] in the file
	s.FFN = 128
	_, err := New(w, &wrong, s).Tensor(0, model.WUp)
	if err == nil || !strings.Contains(err.Error(), "transformer.h.0.mlp.c_fc.weight") || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("wrong shape: %v", err)
	}
	more := *hf
	more.Layers = 3
	s.FFN = 256
	_, err = New(w, &more, s).Tensor(2, model.WO)
	if err == nil || !strings.Contains(err.Error(), "transformer.h.2.attn.c_proj.weight") || !strings.Contains(err.Error(), "gpt2-tiny") {
		t.Fatalf("missing tensor: %v", err)
	}
}
