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
// transposed; GPT-2's Conv1D weights are stored [in, out] already. Each
// tensor is allocated once and every slice is converted straight into its
// place in it (checkpoint.Placement: the transposition, the permutation
// below and the joining of q | k | v or gate | up happen as the bytes read
// are converted, a cache-sized tile at a time), so a rank's load makes no
// intermediate copy of its weights.
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

// seq is the offsets base, base+1, …, base+n−1.
func seq(n, base int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = base + i
	}
	return out
}

// interleaved is the destination columns of n output features of a
// rotate-half q or k projection (heads of hd features), starting at column
// base: feature i of a head goes to its column 2i, feature i + hd/2 to
// 2i+1 (partbench rotates interleaved pairs).
func interleaved(n, hd, base int) []int {
	out := make([]int, n)
	half := hd / 2
	for r := range out {
		h, i := r/hd, r%hd
		if i < half {
			out[r] = base + h*hd + 2*i
		} else {
			out[r] = base + h*hd + 2*(i-half) + 1
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
// needs, each converted straight into its place in out (the Program's
// tensor, allocated once: no slice is first converted into a buffer of its
// own, then transposed, permuted or joined into another).
type recipe struct {
	slices []checkpoint.Slice
	out    *model.Tensor
}

// build is r's tensor once its slices are read.
func (c *Source) build(layer int, name string, r *recipe) (*model.Tensor, error) {
	t := r.out
	k, n, _ := c.Shard.TensorShape(name) // checked by recipe
	if t.K != k || t.N != n || len(t.Data) != k*n {
		return nil, fmt.Errorf("model: %s of layer %d read as [%d, %d], the shard is [%d, %d]", name, layer, t.K, t.N, k, n)
	}
	return t, nil
}

// recipe plans the reads of the rank's shard of a tensor.
func (c *Source) recipe(layer int, name string) (*recipe, error) {
	k, n, ok := c.Shard.TensorShape(name)
	if !ok {
		return nil, fmt.Errorf("model: no tensor %q", name)
	}
	p := &planner{c: c, out: newTensor(k, n)}
	var known bool
	switch c.Config.Family.Layout {
	case arch.SeparateQKV:
		known = p.llama(layer, name)
	case arch.FusedQKV:
		known = p.gpt2(layer, name)
	default:
		p.err = fmt.Errorf("model: checkpoint family %q has no tensor layout", c.Config.Family.Name)
	}
	if p.err == nil && !known {
		p.err = fmt.Errorf("%s has no tensor %q", c.Config.Architecture, name)
	}
	if p.err != nil {
		return nil, fmt.Errorf("layer %d %s: %w", layer, name, p.err)
	}
	return &recipe{slices: p.slices, out: p.out}, nil
}

// planner collects one tensor's slices, each aimed at its place in out;
// the first error stops it.
type planner struct {
	c      *Source
	out    *model.Tensor
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

// rows plans rows [r0, r1) of name (elements of a vector) converted
// row-major into dst; ReadSlices checks that dst holds exactly them.
func (p *planner) rows(name string, r0, r1 int, dst []float32) {
	if t, ok := p.tensor(name); ok {
		p.slices = append(p.slices, checkpoint.Slice{Tensor: t, Lo: int64(r0), Hi: int64(r1), Dst: dst})
	}
}

// cols plans columns [c0, c1) of name ([rows][c1−c0] values) converted
// row-major into dst.
func (p *planner) cols(name string, c0, c1 int, dst []float32) {
	if t, ok := p.tensor(name); ok {
		p.slices = append(p.slices, checkpoint.Slice{Tensor: t, Cols: true, Lo: int64(c0), Hi: int64(c1), Dst: dst})
	}
}

// placed plans rows [lo, hi) of name, or with cols its columns [lo, hi),
// its row r's values written to out.Data[row[r] + c·step].
func (p *planner) placed(name string, cols bool, lo, hi int, row []int, step int) {
	if t, ok := p.tensor(name); ok {
		p.slices = append(p.slices, checkpoint.Slice{Tensor: t, Cols: cols, Lo: int64(lo), Hi: int64(hi),
			Place: &checkpoint.Placement{Data: p.out.Data, Row: row, Step: step}})
	}
}

// outRows plans rows [r0, r0+n) of a [out, in] weight transposed into
// out's columns cols (one per row read).
func (p *planner) outRows(name string, r0, n int, cols []int) {
	p.placed(name, false, r0, r0+n, cols, p.out.N)
}

// whole plans rows [r0, r1) of name as all of out.
func (p *planner) whole(name string, r0, r1 int) { p.rows(name, r0, r1, p.out.Data) }

// vocabRows plans the rank's rows [off, off+size) of a [vocab, hidden]
// embedding, as out's rows (transposed: as out's columns); rows past the
// vocabulary (padding) stay zero.
func (p *planner) vocabRows(name string, transposed bool) {
	s := p.c.Shard
	end := min(s.VocabOffset+s.VocabSize, s.Vocab)
	if end <= s.VocabOffset {
		return
	}
	if transposed {
		p.placed(name, false, s.VocabOffset, end, seq(end-s.VocabOffset, 0), s.VocabSize)
		return
	}
	p.rows(name, s.VocabOffset, end, p.out.Data[:(end-s.VocabOffset)*s.Hidden])
}

// llama plans a SeparateQKV checkpoint's tensor: [out, in] linears
// transposed as they are converted, q and k heads in rotate-half order
// permuted to interleaved pairs on the way. false: not a tensor of the
// family.
func (p *planner) llama(layer int, name string) bool {
	c := p.c
	s, n := c.Shard, c.Config.Family.Names
	pre := n.LayerPrefix(layer)
	ql, kvl, fl := s.AttnWidth(), s.KVWidth(), s.FFN
	switch name {
	case model.WQKV: // [H][q | k | v]
		p.outRows(pre+n.Q, s.Index*ql, ql, interleaved(ql, s.HeadDim, 0))
		p.outRows(pre+n.K, s.Index*kvl, kvl, interleaved(kvl, s.HeadDim, ql))
		p.outRows(pre+n.V, s.Index*kvl, kvl, seq(kvl, ql+kvl))
	case model.WO: // o_proj's columns [H][ql], transposed
		p.placed(pre+n.O, true, s.Index*ql, (s.Index+1)*ql, seq(s.Hidden, 0), s.Hidden)
	case model.WUp: // [H][gate | up]
		p.outRows(pre+n.Gate, s.Index*fl, fl, seq(fl, 0))
		p.outRows(pre+n.Up, s.Index*fl, fl, seq(fl, fl))
	case model.WDown: // down_proj's columns [H][fl], transposed
		p.placed(pre+n.Down, true, s.Index*fl, (s.Index+1)*fl, seq(s.Hidden, 0), s.Hidden)
	case model.AttnNorm:
		p.whole(pre+n.AttnNorm, 0, s.Hidden)
	case model.MLPNorm:
		p.whole(pre+n.MLPNorm, 0, s.Hidden)
	case model.FinalNorm:
		p.whole(n.FinalNorm, 0, s.Hidden)
	case model.Embed:
		p.vocabRows(n.Embed, false)
	case model.LMHead:
		src := n.LMHead
		if c.Config.TieWordEmbeddings {
			src = n.Embed
		}
		p.vocabRows(src, true)
	default:
		return false
	}
	return true
}

// gpt2 plans a FusedQKV checkpoint's tensor: Conv1D [in, out] linears with
// biases, q | k | v columns in one attention weight, a tied LM head. false:
// not a tensor of the family.
func (p *planner) gpt2(layer int, name string) bool {
	c := p.c
	s, n := c.Shard, c.Config.Family.Names
	pre := n.LayerPrefix(layer)
	H := s.Hidden
	ql, kvl, fl := s.AttnWidth(), s.KVWidth(), s.FFN
	// The fused columns are [q H | k H | v H]; the rank's are its heads of
	// each, side by side in out at columns 0, ql, ql+kvl.
	qkv := [][3]int{{s.Index * ql, ql, 0}, {H + s.Index*kvl, kvl, ql}, {2*H + s.Index*kvl, kvl, ql + kvl}}
	switch name {
	case model.WQKV:
		for _, r := range qkv {
			row := make([]int, H)
			for i := range row {
				row[i] = i*p.out.N + r[2]
			}
			p.placed(pre+n.QKV, true, r[0], r[0]+r[1], row, 1)
		}
	case model.BQKV:
		for _, r := range qkv {
			p.rows(pre+n.QKVBias, r[0], r[0]+r[1], p.out.Data[r[2]:r[2]+r[1]])
		}
	case model.WO:
		p.whole(pre+n.O, s.Index*ql, (s.Index+1)*ql)
	case model.BO:
		p.whole(pre+n.OBias, 0, H)
	case model.WUp:
		p.cols(pre+n.Up, s.Index*fl, (s.Index+1)*fl, p.out.Data)
	case model.BUp:
		p.whole(pre+n.UpBias, s.Index*fl, (s.Index+1)*fl)
	case model.WDown:
		p.whole(pre+n.Down, s.Index*fl, (s.Index+1)*fl)
	case model.BDown:
		p.whole(pre+n.DownBias, 0, H)
	case model.AttnNorm:
		p.whole(pre+n.AttnNorm, 0, H)
	case model.AttnNormBias:
		p.whole(pre+n.AttnNormBias, 0, H)
	case model.MLPNorm:
		p.whole(pre+n.MLPNorm, 0, H)
	case model.MLPNormBias:
		p.whole(pre+n.MLPNormBias, 0, H)
	case model.FinalNorm:
		p.whole(n.FinalNorm, 0, H)
	case model.FinalNormBias:
		p.whole(n.FinalNormBias, 0, H)
	case model.PosEmbed:
		p.whole(n.PosEmbed, 0, c.Config.MaxPositions)
	case model.Embed:
		p.vocabRows(n.Embed, false)
	case model.LMHead:
		p.vocabRows(n.Embed, true)
	default:
		return false
	}
	return true
}
