package shards

import (
	"fmt"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/model"
)

// Source is a model.Source of one rank's shards read from a Hugging Face
// checkpoint: only the rows or columns of each tensor the shard holds are
// read (column and row shards under TP; a stage asks only for its layers,
// its embedding or LM head), converted to float32 and laid out as the
// Program's tensors ([in, out]). Llama linears are stored [out, in] and are
// transposed; GPT-2's Conv1D weights are stored [in, out] already.
//
// Llama's q and k projections are written for rotate-half rotary embeddings
// (pairs (i, i + hd/2)); partbench rotates interleaved pairs (2i, 2i+1), so
// each q and k head's output features are permuted on the way in (feature
// 2i ← i, 2i+1 ← i + hd/2). Attention scores are dot products over a head's
// features, unchanged when q and k are permuted alike.
type Source struct {
	W      *checkpoint.Weights
	Config *checkpoint.Config
	Shard  model.Shard

	specs map[string]checkpoint.TensorSpec
}

var _ model.Source = (*Source)(nil)

// New is the Source of shard s of the checkpoint w described by c.
func New(w *checkpoint.Weights, c *checkpoint.Config, s model.Shard) *Source {
	specs := map[string]checkpoint.TensorSpec{}
	for _, sp := range checkpoint.ExpectedTensors(c) {
		specs[sp.Name] = sp
	}
	return &Source{W: w, Config: c, Shard: s, specs: specs}
}

// tensor is the checkpoint's tensor name, checked against the config's shape
// and a float dtype (errors name the tensor and its file).
func (c *Source) tensor(name string) (checkpoint.Tensor, error) {
	sp, ok := c.specs[name]
	if !ok {
		return checkpoint.Tensor{}, fmt.Errorf("%s: tensor %q is not a parameter of %s", c.W.Dir, name, c.Config.Architecture)
	}
	return c.W.Expect(sp)
}

// rows reads rows [r0, r1) of name (elements of a vector).
func (c *Source) rows(name string, r0, r1 int) ([]float32, error) {
	t, err := c.tensor(name)
	if err != nil {
		return nil, err
	}
	return t.Rows(int64(r0), int64(r1))
}

// cols reads columns [c0, c1) of name, [rows][c1−c0].
func (c *Source) cols(name string, c0, c1 int) ([]float32, error) {
	t, err := c.tensor(name)
	if err != nil {
		return nil, err
	}
	return t.Cols(int64(c0), int64(c1))
}

// Tensor reads the rank's shard of a tensor (a name of model.Shard.TensorShape).
func (c *Source) Tensor(layer int, name string) (*model.Tensor, error) {
	s := c.Shard
	k, n, ok := s.TensorShape(name)
	if !ok {
		return nil, fmt.Errorf("model: no tensor %q", name)
	}
	var t *model.Tensor
	var err error
	switch c.Config.Family.Layout {
	case arch.SeparateQKV:
		t, err = c.llama(layer, name)
	case arch.FusedQKV:
		t, err = c.gpt2(layer, name)
	default:
		err = fmt.Errorf("model: checkpoint family %q has no tensor layout", c.Config.Family.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("layer %d %s: %w", layer, name, err)
	}
	if t.K != k || t.N != n || len(t.Data) != k*n {
		return nil, fmt.Errorf("model: %s of layer %d read as [%d, %d], the shard is [%d, %d]", name, layer, t.K, t.N, k, n)
	}
	return t, nil
}

// outRows reads rows [r0, r0+n) of a [out, in] weight and returns them as
// [in][n] (transposed).
func (c *Source) outRows(name string, r0, n int) (*model.Tensor, error) {
	d, err := c.rows(name, r0, r0+n)
	if err != nil {
		return nil, err
	}
	return model.Transpose(&model.Tensor{K: n, N: len(d) / max(n, 1), Data: d}), nil
}

// hcat joins [k][n_i] tensors side by side.
func hcat(parts ...*model.Tensor) *model.Tensor {
	n := 0
	for _, p := range parts {
		n += p.N
	}
	k := parts[0].K
	out := newTensor(k, n)
	for r := 0; r < k; r++ {
		c := 0
		for _, p := range parts {
			copy(out.Data[r*n+c:r*n+c+p.N], p.Data[r*p.N:(r+1)*p.N])
			c += p.N
		}
	}
	return out
}

// interleave permutes each head's hd columns of t from rotate-half order to
// interleaved pairs: column 2i ← i, 2i+1 ← i + hd/2.
func interleave(t *model.Tensor, hd int) *model.Tensor {
	out := newTensor(t.K, t.N)
	half := hd / 2
	for r := 0; r < t.K; r++ {
		for h := 0; h < t.N/hd; h++ {
			src, dst := t.Data[r*t.N+h*hd:], out.Data[r*t.N+h*hd:]
			for i := 0; i < half; i++ {
				dst[2*i], dst[2*i+1] = src[i], src[i+half]
			}
		}
	}
	return out
}

func newTensor(k, n int) *model.Tensor {
	return &model.Tensor{K: k, N: n, Data: make([]float32, k*n)}
}

// vector is a [1, len(d)] tensor.
func vector(d []float32, err error) (*model.Tensor, error) {
	if err != nil {
		return nil, err
	}
	return &model.Tensor{K: 1, N: len(d), Data: d}, nil
}

// vocabRows reads the rank's rows [off, off+size) of a [vocab, hidden]
// embedding; rows past the vocabulary (padding) are zero.
func (c *Source) vocabRows(name string) (*model.Tensor, error) {
	s := c.Shard
	t := newTensor(s.VocabSize, s.Hidden)
	end := min(s.VocabOffset+s.VocabSize, s.Vocab)
	if end <= s.VocabOffset {
		return t, nil
	}
	d, err := c.rows(name, s.VocabOffset, end)
	if err != nil {
		return nil, err
	}
	copy(t.Data, d)
	return t, nil
}

// llama reads a SeparateQKV checkpoint: [out, in] linears, q and k heads
// in rotate-half order.
func (c *Source) llama(layer int, name string) (*model.Tensor, error) {
	s, n := c.Shard, c.Config.Family.Names
	p := n.LayerPrefix(layer)
	ql, kvl, fl := s.AttnWidth(), s.KVWidth(), s.FFN
	switch name {
	case model.WQKV:
		q, err := c.outRows(p+n.Q, s.Index*ql, ql)
		if err != nil {
			return nil, err
		}
		k, err := c.outRows(p+n.K, s.Index*kvl, kvl)
		if err != nil {
			return nil, err
		}
		v, err := c.outRows(p+n.V, s.Index*kvl, kvl)
		if err != nil {
			return nil, err
		}
		return hcat(interleave(q, s.HeadDim), interleave(k, s.HeadDim), v), nil
	case model.WO:
		d, err := c.cols(p+n.O, s.Index*ql, (s.Index+1)*ql)
		if err != nil {
			return nil, err
		}
		return model.Transpose(&model.Tensor{K: s.Hidden, N: ql, Data: d}), nil
	case model.WUp:
		g, err := c.outRows(p+n.Gate, s.Index*fl, fl)
		if err != nil {
			return nil, err
		}
		u, err := c.outRows(p+n.Up, s.Index*fl, fl)
		if err != nil {
			return nil, err
		}
		return hcat(g, u), nil
	case model.WDown:
		d, err := c.cols(p+n.Down, s.Index*fl, (s.Index+1)*fl)
		if err != nil {
			return nil, err
		}
		return model.Transpose(&model.Tensor{K: s.Hidden, N: fl, Data: d}), nil
	case model.AttnNorm:
		return vector(c.rows(p+n.AttnNorm, 0, s.Hidden))
	case model.MLPNorm:
		return vector(c.rows(p+n.MLPNorm, 0, s.Hidden))
	case model.FinalNorm:
		return vector(c.rows(n.FinalNorm, 0, s.Hidden))
	case model.Embed:
		return c.vocabRows(n.Embed)
	case model.LMHead:
		src := n.LMHead
		if c.Config.TieWordEmbeddings {
			src = n.Embed
		}
		t, err := c.vocabRows(src)
		if err != nil {
			return nil, err
		}
		return model.Transpose(t), nil
	}
	return nil, fmt.Errorf("%s has no tensor %q", c.Config.Architecture, name)
}

// gpt2 reads a FusedQKV checkpoint: Conv1D [in, out] linears with biases,
// q | k | v columns in one attention weight, a tied LM head.
func (c *Source) gpt2(layer int, name string) (*model.Tensor, error) {
	s, n := c.Shard, c.Config.Family.Names
	p := n.LayerPrefix(layer)
	H := s.Hidden
	ql, kvl, fl := s.AttnWidth(), s.KVWidth(), s.FFN
	// The fused columns are [q H | k H | v H]; the rank's are its heads of each.
	qkv := [][2]int{{s.Index * ql, ql}, {H + s.Index*kvl, kvl}, {2*H + s.Index*kvl, kvl}}
	switch name {
	case model.WQKV:
		var parts []*model.Tensor
		for _, r := range qkv {
			d, err := c.cols(p+n.QKV, r[0], r[0]+r[1])
			if err != nil {
				return nil, err
			}
			parts = append(parts, &model.Tensor{K: H, N: r[1], Data: d})
		}
		return hcat(parts...), nil
	case model.BQKV:
		var d []float32
		for _, r := range qkv {
			part, err := c.rows(p+n.QKVBias, r[0], r[0]+r[1])
			if err != nil {
				return nil, err
			}
			d = append(d, part...)
		}
		return vector(d, nil)
	case model.WO:
		d, err := c.rows(p+n.O, s.Index*ql, (s.Index+1)*ql)
		return &model.Tensor{K: ql, N: H, Data: d}, err
	case model.BO:
		return vector(c.rows(p+n.OBias, 0, H))
	case model.WUp:
		d, err := c.cols(p+n.Up, s.Index*fl, (s.Index+1)*fl)
		return &model.Tensor{K: H, N: fl, Data: d}, err
	case model.BUp:
		return vector(c.rows(p+n.UpBias, s.Index*fl, (s.Index+1)*fl))
	case model.WDown:
		d, err := c.rows(p+n.Down, s.Index*fl, (s.Index+1)*fl)
		return &model.Tensor{K: fl, N: H, Data: d}, err
	case model.BDown:
		return vector(c.rows(p+n.DownBias, 0, H))
	case model.AttnNorm:
		return vector(c.rows(p+n.AttnNorm, 0, H))
	case model.AttnNormBias:
		return vector(c.rows(p+n.AttnNormBias, 0, H))
	case model.MLPNorm:
		return vector(c.rows(p+n.MLPNorm, 0, H))
	case model.MLPNormBias:
		return vector(c.rows(p+n.MLPNormBias, 0, H))
	case model.FinalNorm:
		return vector(c.rows(n.FinalNorm, 0, H))
	case model.FinalNormBias:
		return vector(c.rows(n.FinalNormBias, 0, H))
	case model.PosEmbed:
		d, err := c.rows(n.PosEmbed, 0, c.Config.MaxPositions)
		return &model.Tensor{K: c.Config.MaxPositions, N: H, Data: d}, err
	case model.Embed:
		return c.vocabRows(n.Embed)
	case model.LMHead:
		t, err := c.vocabRows(n.Embed)
		if err != nil {
			return nil, err
		}
		return model.Transpose(t), nil
	}
	return nil, fmt.Errorf("%s has no tensor %q", c.Config.Architecture, name)
}
