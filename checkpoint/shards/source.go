package shards

import (
	"fmt"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
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
//
// A rank's loader calls Prefetch with its whole list first, so that the
// slices of all its tensors are read as one list; Tensor alone reads one
// tensor's slices. A Source is used by one goroutine at a time.
type Source struct {
	W      *checkpoint.Weights
	Config *checkpoint.Config
	Shard  model.Shard

	specs   map[string]checkpoint.TensorSpec
	fetched map[key]*recipe // read by Prefetch, not yet handed out
}

// key names one of the rank's tensors.
type key struct {
	layer int
	name  string
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

// Tensor reads the rank's shard of a tensor (a name of model.Shard.TensorShape):
// from what Prefetch read when it read it (the tensor is then handed out
// once: Prefetch's buffers are let go), else alone, its slices in one
// checkpoint.ReadSlices.
func (c *Source) Tensor(layer int, name string) (*model.Tensor, error) {
	if r := c.fetched[key{layer, name}]; r != nil {
		delete(c.fetched, key{layer, name})
		return c.build(layer, name, r)
	}
	r, err := c.recipe(layer, name)
	if err != nil {
		return nil, err
	}
	if err := checkpoint.ReadSlices(r.slices); err != nil {
		return nil, fmt.Errorf("layer %d %s: %w", layer, name, err)
	}
	return c.build(layer, name, r)
}

// Prefetch reads the rank's shards of every tensor listed (exec/cpu
// passes partition.Plan.Tensors) with one checkpoint.ReadSlices over all their
// slices, so that reads are planned across tensors (sorted by offset, small
// gaps read through, several in flight) rather than one tensor at a time;
// Tensor then serves each listed tensor once from what was read. The slices
// are held as float32 until handed out: about the rank's weights at most.
// A tensor listed twice is read once. Errors name the layer and tensor (and
// the checkpoint's tensor and file), and nothing is kept.
func (c *Source) Prefetch(tensors []partition.TensorShard) error {
	got := map[key]*recipe{}
	var all []checkpoint.Slice
	for _, ts := range tensors {
		k := key{ts.Layer, ts.Name}
		if got[k] != nil {
			continue
		}
		r, err := c.recipe(ts.Layer, ts.Name)
		if err != nil {
			return err
		}
		got[k] = r
		all = append(all, r.slices...)
	}
	if err := checkpoint.ReadSlices(all); err != nil {
		return fmt.Errorf("reading %d tensors of the rank: %w", len(got), err)
	}
	// ReadSlices filled the recipes' buffers: its Slice values share them.
	if c.fetched == nil {
		c.fetched = map[key]*recipe{}
	}
	for k, r := range got {
		c.fetched[k] = r
	}
	return nil
}

// recipe is how one tensor of the rank is read: the checkpoint slices it
// needs and how their values become the Program's tensor.
type recipe struct {
	slices []checkpoint.Slice
	make   func(d [][]float32) *model.Tensor // d[i] is slices[i]'s values
}

// build makes the tensor from r's read slices and checks its shape.
func (c *Source) build(layer int, name string, r *recipe) (*model.Tensor, error) {
	d := make([][]float32, len(r.slices))
	for i, x := range r.slices {
		d[i] = x.Dst
	}
	t := r.make(d)
	k, n, _ := c.Shard.TensorShape(name) // checked by recipe
	if t.K != k || t.N != n || len(t.Data) != k*n {
		return nil, fmt.Errorf("model: %s of layer %d read as [%d, %d], the shard is [%d, %d]", name, layer, t.K, t.N, k, n)
	}
	return t, nil
}

// recipe plans the reads of the rank's shard of a tensor.
func (c *Source) recipe(layer int, name string) (*recipe, error) {
	if _, _, ok := c.Shard.TensorShape(name); !ok {
		return nil, fmt.Errorf("model: no tensor %q", name)
	}
	p := &planner{c: c}
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
	return &recipe{slices: p.slices, make: mk}, nil
}

// planner collects one tensor's slices; the first error stops it.
type planner struct {
	c      *Source
	slices []checkpoint.Slice
	err    error
}

// tensor is the checkpoint's tensor name, checked against the config's shape
// and a float dtype (errors name the tensor and its file).
func (p *planner) tensor(name string) (checkpoint.Tensor, bool) {
	if p.err != nil {
		return checkpoint.Tensor{}, false
	}
	c := p.c
	sp, ok := c.specs[name]
	if !ok {
		p.err = fmt.Errorf("%s: tensor %q is not a parameter of %s", c.W.Dir, name, c.Config.Architecture)
		return checkpoint.Tensor{}, false
	}
	t, err := c.W.Expect(sp)
	p.err = err
	return t, err == nil
}

func (p *planner) add(x checkpoint.Slice, err error) int {
	if err != nil {
		p.err = err
		return -1
	}
	p.slices = append(p.slices, x)
	return len(p.slices) - 1
}

// rows plans rows [r0, r1) of name (elements of a vector); the result is
// the slice's index in d.
func (p *planner) rows(name string, r0, r1 int) int {
	t, ok := p.tensor(name)
	if !ok {
		return -1
	}
	return p.add(t.RowsSlice(int64(r0), int64(r1)))
}

// cols plans columns [c0, c1) of name, [rows][c1−c0].
func (p *planner) cols(name string, c0, c1 int) int {
	t, ok := p.tensor(name)
	if !ok {
		return -1
	}
	return p.add(t.ColsSlice(int64(c0), int64(c1)))
}

// outRows plans rows [r0, r0+n) of a [out, in] weight, made [in][n]
// (transposed).
func (p *planner) outRows(name string, r0, n int) func(d [][]float32) *model.Tensor {
	i := p.rows(name, r0, r0+n)
	return func(d [][]float32) *model.Tensor {
		return model.Transpose(&model.Tensor{K: n, N: len(d[i]) / max(n, 1), Data: d[i]})
	}
}

// vector plans rows [r0, r1) of name as a [1, r1−r0] tensor.
func (p *planner) vector(name string, r0, r1 int) func(d [][]float32) *model.Tensor {
	i := p.rows(name, r0, r1)
	return func(d [][]float32) *model.Tensor { return &model.Tensor{K: 1, N: len(d[i]), Data: d[i]} }
}

// vocabRows plans the rank's rows [off, off+size) of a [vocab, hidden]
// embedding; rows past the vocabulary (padding) are zero.
func (p *planner) vocabRows(name string) func(d [][]float32) *model.Tensor {
	s := p.c.Shard
	end := min(s.VocabOffset+s.VocabSize, s.Vocab)
	i := -1
	if end > s.VocabOffset {
		i = p.rows(name, s.VocabOffset, end)
	}
	return func(d [][]float32) *model.Tensor {
		t := newTensor(s.VocabSize, s.Hidden)
		if i >= 0 {
			copy(t.Data, d[i])
		}
		return t
	}
}

// llama plans a SeparateQKV checkpoint's tensor: [out, in] linears, q and k
// heads in rotate-half order. nil: not a tensor of the family.
func (p *planner) llama(layer int, name string) func(d [][]float32) *model.Tensor {
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
			return hcat(interleave(q(d), s.HeadDim), interleave(k(d), s.HeadDim), v(d))
		}
	case model.WO:
		i := p.cols(pre+n.O, s.Index*ql, (s.Index+1)*ql)
		return func(d [][]float32) *model.Tensor {
			return model.Transpose(&model.Tensor{K: s.Hidden, N: ql, Data: d[i]})
		}
	case model.WUp:
		g := p.outRows(pre+n.Gate, s.Index*fl, fl)
		u := p.outRows(pre+n.Up, s.Index*fl, fl)
		return func(d [][]float32) *model.Tensor { return hcat(g(d), u(d)) }
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
func (p *planner) gpt2(layer int, name string) func(d [][]float32) *model.Tensor {
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
			return hcat(ts...)
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
