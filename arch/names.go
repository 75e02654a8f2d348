package arch

import (
	"fmt"
	"strings"
)

// TensorNames is a family's checkpoint names for the model's tensors: the
// one place they are spelled. Layer is the prefix of a layer's tensors with
// one %d for the layer index; the per-layer names follow it. An empty name
// is a tensor the family does not have.
type TensorNames struct {
	Embed, PosEmbed, FinalNorm, FinalNormBias, LMHead string

	Layer                                        string
	AttnNorm, AttnNormBias, MLPNorm, MLPNormBias string
	Q, K, V                                      string // SeparateQKV
	QKV, QKVBias                                 string // FusedQKV: q | k | v columns
	O, OBias, Gate, Up, UpBias, Down, DownBias   string
	// AltPrefix, when set, is a prefix some checkpoints of the family save
	// their names without (TensorSpec.Alt).
	AltPrefix string
}

// LayerPrefix is the names' prefix of layer l's tensors.
func (n TensorNames) LayerPrefix(l int) string { return fmt.Sprintf(n.Layer, l) }

// layoutTensors lists d's parameter tensors from its family's names and
// layout, in model order: embedding, learned positions, each layer (norm,
// attention, norm, MLP), the final norm and, untied, the LM head. A
// SeparateQKV linear is stored [out, in], a FusedQKV one [in, out].
func layoutTensors(d *Description) []TensorSpec {
	n, fam := d.Family.Names, d.Family
	h, q, kv, f := d.Hidden, d.Heads*d.HeadDim, d.KVHeads*d.HeadDim, d.FFN
	var out []TensorSpec
	add := func(name string, shape ...int) {
		if name == "" {
			return
		}
		s := spec(name, shape...)
		if n.AltPrefix != "" {
			s.Alt = strings.TrimPrefix(name, n.AltPrefix)
		}
		out = append(out, s)
	}
	linear := func(name string, in, outF int) {
		if fam.Layout == FusedQKV {
			add(name, in, outF)
		} else {
			add(name, outF, in)
		}
	}
	add(n.Embed, d.Vocab, h)
	if d.LearnedPositions {
		add(n.PosEmbed, d.MaxPositions, h)
	}
	for l := 0; l < d.Layers; l++ {
		p := n.LayerPrefix(l)
		add(p+n.AttnNorm, h)
		if d.Norm == LayerNorm {
			add(p+n.AttnNormBias, h)
		}
		if fam.Layout == FusedQKV {
			linear(p+n.QKV, h, q+2*kv)
			if d.Bias {
				add(p+n.QKVBias, q+2*kv)
			}
		} else {
			linear(p+n.Q, h, q)
			linear(p+n.K, h, kv)
			linear(p+n.V, h, kv)
		}
		linear(p+n.O, q, h)
		if d.Bias {
			add(p+n.OBias, h)
		}
		add(p+n.MLPNorm, h)
		if d.Norm == LayerNorm {
			add(p+n.MLPNormBias, h)
		}
		if d.GatedMLP {
			linear(p+n.Gate, h, f)
		}
		linear(p+n.Up, h, f)
		if d.Bias {
			add(p+n.UpBias, f)
		}
		linear(p+n.Down, f, h)
		if d.Bias {
			add(p+n.DownBias, h)
		}
	}
	add(n.FinalNorm, h)
	if d.Norm == LayerNorm {
		add(n.FinalNormBias, h)
	}
	if !d.TieWordEmbeddings {
		add(n.LMHead, d.Vocab, h)
	}
	return out
}
