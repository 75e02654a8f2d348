package shards

import (
	"fmt"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/model"
)

// twoStep is the loader before conversion and layout were one pass, kept
// as the reference the Source is compared with: each slice read row-major
// into a buffer of its own (checkpoint.ReadSlices), then laid out as the
// Program's tensors in further passes (model.Transpose of the [out, in]
// linears, the rotate-half → interleaved permutation of q and k heads,
// parts joined side by side), one tensor at a time.
type twoStep struct {
	W      *checkpoint.Weights
	Config *checkpoint.Config
	Shard  model.Shard
}

func newTwoStep(w *checkpoint.Weights, c *checkpoint.Config, s model.Shard) *twoStep {
	return &twoStep{W: w, Config: c, Shard: s}
}

// twoStepHcat joins [k][n_i] tensors side by side.
func twoStepHcat(parts ...*model.Tensor) *model.Tensor {
	n := 0
	for _, p := range parts {
		n += p.N
	}
	k := parts[0].K
	out := twoStepTensor(k, n)
	for r := 0; r < k; r++ {
		c := 0
		for _, p := range parts {
			copy(out.Data[r*n+c:r*n+c+p.N], p.Data[r*p.N:(r+1)*p.N])
			c += p.N
		}
	}
	return out
}

// twoStepInterleave permutes each head's hd columns of t from rotate-half order to
// interleaved pairs: column 2i ← i, 2i+1 ← i + hd/2.
func twoStepInterleave(t *model.Tensor, hd int) *model.Tensor {
	out := twoStepTensor(t.K, t.N)
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

func twoStepTensor(k, n int) *model.Tensor {
	return &model.Tensor{K: k, N: n, Data: make([]float32, k*n)}
}

// Tensor reads the rank's shard of a tensor alone.
func (c *twoStep) Tensor(layer int, name string) (*model.Tensor, error) {
	r, err := c.twoStepRecipe(layer, name)
	if err != nil {
		return nil, err
	}
	if err := checkpoint.ReadSlices(r.slices); err != nil {
		return nil, fmt.Errorf("layer %d %s: %w", layer, name, err)
	}
	return c.build(layer, name, r)
}

// twoStepRecipe is how one tensor of the rank is read: the checkpoint slices it
// needs and how their values become the Program's tensor.
type twoStepRecipe struct {
	slices []checkpoint.Slice
	make   func(d [][]float32) *model.Tensor // d[i] is slices[i]'s values
}

// build makes the tensor from r's read slices and checks its shape.
func (c *twoStep) build(layer int, name string, r *twoStepRecipe) (*model.Tensor, error) {
	d := make([][]float32, len(r.slices))
	for i, x := range r.slices {
		d[i] = x.Dst
	}
	t := r.make(d)
	k, n, _ := c.Shard.TensorShape(name) // checked by twoStepRecipe
	if t.K != k || t.N != n || len(t.Data) != k*n {
		return nil, fmt.Errorf("model: %s of layer %d read as [%d, %d], the shard is [%d, %d]", name, layer, t.K, t.N, k, n)
	}
	return t, nil
}

// twoStepRecipe plans the reads of the rank's shard of a tensor.
func (c *twoStep) twoStepRecipe(layer int, name string) (*twoStepRecipe, error) {
	if _, _, ok := c.Shard.TensorShape(name); !ok {
		return nil, fmt.Errorf("model: no tensor %q", name)
	}
	p := &twoStepPlanner{c: c}
	var mk func(d [][]float32) *model.Tensor
	switch c.Config.Family.Layout {
	case arch.SeparateQKV:
		mk = p.llama(layer, name)
	case arch.FusedQKV:
		mk = p.gpt2(layer, name)
	default:
		p.err = fmt.Errorf("model: checkpoint family %q has no tensor layout", c.Config.Family.Name)
	}
	if p.err == nil && mk == nil {
		p.err = fmt.Errorf("%s has no tensor %q", c.Config.Architecture, name)
	}
	if p.err != nil {
		return nil, fmt.Errorf("layer %d %s: %w", layer, name, p.err)
	}
	return &twoStepRecipe{slices: p.slices, make: mk}, nil
}

// twoStepPlanner collects one tensor's slices; the first error stops it.
type twoStepPlanner struct {
	c      *twoStep
	slices []checkpoint.Slice
	err    error
}

// tensor is the checkpoint's tensor name, looked up and checked as the
// Source does (which tensor holds a name is not what is compared).
func (p *twoStepPlanner) tensor(name string) (checkpoint.Tensor, bool) {
	if p.err != nil {
		return checkpoint.Tensor{}, false
	}
	q := &planner{c: New(p.c.W, p.c.Config, p.c.Shard)}
	t, ok := q.tensor(name)
	p.err = q.err
	return t, ok
}

func (p *twoStepPlanner) add(x checkpoint.Slice, err error) int {
	if err != nil {
		p.err = err
		return -1
	}
	p.slices = append(p.slices, x)
	return len(p.slices) - 1
}

// rows plans rows [r0, r1) of name (elements of a vector); the result is
// the slice's index in d.
func (p *twoStepPlanner) rows(name string, r0, r1 int) int {
	t, ok := p.tensor(name)
	if !ok {
		return -1
	}
	return p.add(t.RowsSlice(int64(r0), int64(r1)))
}

// cols plans columns [c0, c1) of name, [rows][c1−c0].
func (p *twoStepPlanner) cols(name string, c0, c1 int) int {
	t, ok := p.tensor(name)
	if !ok {
		return -1
	}
	return p.add(t.ColsSlice(int64(c0), int64(c1)))
}

// outRows plans rows [r0, r0+n) of a [out, in] weight, made [in][n]
// (transposed).
func (p *twoStepPlanner) outRows(name string, r0, n int) func(d [][]float32) *model.Tensor {
	i := p.rows(name, r0, r0+n)
	return func(d [][]float32) *model.Tensor {
		return model.Transpose(&model.Tensor{K: n, N: len(d[i]) / max(n, 1), Data: d[i]})
	}
}

// vector plans rows [r0, r1) of name as a [1, r1−r0] tensor.
func (p *twoStepPlanner) vector(name string, r0, r1 int) func(d [][]float32) *model.Tensor {
	i := p.rows(name, r0, r1)
	return func(d [][]float32) *model.Tensor { return &model.Tensor{K: 1, N: len(d[i]), Data: d[i]} }
}

// vocabRows plans the rank's rows [off, off+size) of a [vocab, hidden]
// embedding; rows past the vocabulary (padding) are zero.
func (p *twoStepPlanner) vocabRows(name string) func(d [][]float32) *model.Tensor {
	s := p.c.Shard
	end := min(s.VocabOffset+s.VocabSize, s.Vocab)
	i := -1
	if end > s.VocabOffset {
		i = p.rows(name, s.VocabOffset, end)
	}
	return func(d [][]float32) *model.Tensor {
		t := twoStepTensor(s.VocabSize, s.Hidden)
		if i >= 0 {
			copy(t.Data, d[i])
		}
		return t
	}
}

// llama plans a SeparateQKV checkpoint's tensor: [out, in] linears, q and k
// heads in rotate-half order. nil: not a tensor of the family.
func (p *twoStepPlanner) llama(layer int, name string) func(d [][]float32) *model.Tensor {
	c := p.c
	s, n := c.Shard, c.Config.Family.Names
	pre := n.LayerPrefix(layer)
	ql, kvl, fl := s.AttnWidth(), s.KVWidth(), s.FFN
	switch name {
	case model.WQKV:
		q := p.outRows(pre+n.Q, s.Index*ql, ql)
		k := p.outRows(pre+n.K, s.Index*kvl, kvl)
		v := p.outRows(pre+n.V, s.Index*kvl, kvl)
		return func(d [][]float32) *model.Tensor {
			return twoStepHcat(twoStepInterleave(q(d), s.HeadDim), twoStepInterleave(k(d), s.HeadDim), v(d))
		}
	case model.WO:
		i := p.cols(pre+n.O, s.Index*ql, (s.Index+1)*ql)
		return func(d [][]float32) *model.Tensor {
			return model.Transpose(&model.Tensor{K: s.Hidden, N: ql, Data: d[i]})
		}
	case model.WUp:
		g := p.outRows(pre+n.Gate, s.Index*fl, fl)
		u := p.outRows(pre+n.Up, s.Index*fl, fl)
		return func(d [][]float32) *model.Tensor { return twoStepHcat(g(d), u(d)) }
	case model.WDown:
		i := p.cols(pre+n.Down, s.Index*fl, (s.Index+1)*fl)
		return func(d [][]float32) *model.Tensor {
			return model.Transpose(&model.Tensor{K: s.Hidden, N: fl, Data: d[i]})
		}
	case model.AttnNorm:
		return p.vector(pre+n.AttnNorm, 0, s.Hidden)
	case model.MLPNorm:
		return p.vector(pre+n.MLPNorm, 0, s.Hidden)
	case model.FinalNorm:
		return p.vector(n.FinalNorm, 0, s.Hidden)
	case model.Embed:
		return p.vocabRows(n.Embed)
	case model.LMHead:
		src := n.LMHead
		if c.Config.TieWordEmbeddings {
			src = n.Embed
		}
		e := p.vocabRows(src)
		return func(d [][]float32) *model.Tensor { return model.Transpose(e(d)) }
	}
	return nil
}

// gpt2 plans a FusedQKV checkpoint's tensor: Conv1D [in, out] linears with
// biases, q | k | v columns in one attention weight, a tied LM head. nil:
// not a tensor of the family.
func (p *twoStepPlanner) gpt2(layer int, name string) func(d [][]float32) *model.Tensor {
	c := p.c
	s, n := c.Shard, c.Config.Family.Names
	pre := n.LayerPrefix(layer)
	H := s.Hidden
	ql, kvl, fl := s.AttnWidth(), s.KVWidth(), s.FFN
	// The fused columns are [q H | k H | v H]; the rank's are its heads of each.
	qkv := [][2]int{{s.Index * ql, ql}, {H + s.Index*kvl, kvl}, {2*H + s.Index*kvl, kvl}}
	mat := func(i, k, n int) func(d [][]float32) *model.Tensor {
		return func(d [][]float32) *model.Tensor { return &model.Tensor{K: k, N: n, Data: d[i]} }
	}
	switch name {
	case model.WQKV:
		var parts []func(d [][]float32) *model.Tensor
		for _, r := range qkv {
			parts = append(parts, mat(p.cols(pre+n.QKV, r[0], r[0]+r[1]), H, r[1]))
		}
		return func(d [][]float32) *model.Tensor {
			ts := make([]*model.Tensor, len(parts))
			for j, f := range parts {
				ts[j] = f(d)
			}
			return twoStepHcat(ts...)
		}
	case model.BQKV:
		var idx []int
		for _, r := range qkv {
			idx = append(idx, p.rows(pre+n.QKVBias, r[0], r[0]+r[1]))
		}
		return func(d [][]float32) *model.Tensor {
			var v []float32
			for _, i := range idx {
				v = append(v, d[i]...)
			}
			return &model.Tensor{K: 1, N: len(v), Data: v}
		}
	case model.WO:
		return mat(p.rows(pre+n.O, s.Index*ql, (s.Index+1)*ql), ql, H)
	case model.BO:
		return p.vector(pre+n.OBias, 0, H)
	case model.WUp:
		return mat(p.cols(pre+n.Up, s.Index*fl, (s.Index+1)*fl), H, fl)
	case model.BUp:
		return p.vector(pre+n.UpBias, s.Index*fl, (s.Index+1)*fl)
	case model.WDown:
		return mat(p.rows(pre+n.Down, s.Index*fl, (s.Index+1)*fl), fl, H)
	case model.BDown:
		return p.vector(pre+n.DownBias, 0, H)
	case model.AttnNorm:
		return p.vector(pre+n.AttnNorm, 0, H)
	case model.AttnNormBias:
		return p.vector(pre+n.AttnNormBias, 0, H)
	case model.MLPNorm:
		return p.vector(pre+n.MLPNorm, 0, H)
	case model.MLPNormBias:
		return p.vector(pre+n.MLPNormBias, 0, H)
	case model.FinalNorm:
		return p.vector(n.FinalNorm, 0, H)
	case model.FinalNormBias:
		return p.vector(n.FinalNormBias, 0, H)
	case model.PosEmbed:
		return mat(p.rows(n.PosEmbed, 0, c.Config.MaxPositions), c.Config.MaxPositions, H)
	case model.Embed:
		return p.vocabRows(n.Embed)
	case model.LMHead:
		e := p.vocabRows(n.Embed)
		return func(d [][]float32) *model.Tensor { return model.Transpose(e(d)) }
	}
	return nil
}
