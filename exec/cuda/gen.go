package cuda

import (
	_ "embed" // gen.cu
	"fmt"
	"math"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// genSource is the device weight generator (gen.cu), part of the second
// module (extra.go).
//
//go:embed gen.cu
var genSource string

// genSig is pb_gen's parameter list: dst, ld, rows, cols, base, keyRow0,
// keyCol0, transposed, scale, add.
const genSig = "piiiuiiiff"

// The generator's spreads (model/generate.go, model/weights.go): norm
// weights 1 + 0.1·u, biases and position embeddings 0.1·u. The tests hold
// every tensor generated from these against model.Generator bit for bit,
// so a change there fails here.
const (
	genNormNoise = 0.1
	genBiasNoise = 0.1
)

// genSegment is one pb_gen launch: a rectangle rows × cols of a shard
// tensor of n columns, starting at (dstRow0, dstCol0), whose element (r, c)
// is scale·Unit(KeyAt(base, keyRow0 + r, keyCol0 + c)) (+ add when add ≠ 0),
// or with transposed KeyAt(base, keyRow0 + c, keyCol0 + r). The tensor is
// zero outside its segments (padded vocabulary rows and columns).
type genSegment struct {
	dstRow0, dstCol0 int
	rows, cols       int
	base             uint64
	keyRow0, keyCol0 int
	transposed       bool
	scale, add       float32
}

// at is element (r, c) of the segment, as pb_gen computes it.
func (s genSegment) at(r, c int) float32 {
	kr, kc := s.keyRow0+r, s.keyCol0+c
	if s.transposed {
		kr, kc = s.keyRow0+c, s.keyCol0+r
	}
	v := s.scale * model.Unit(model.KeyAt(s.base, kr, kc))
	if s.add != 0 {
		v += s.add
	}
	return v
}

// genApply writes the segments into a zeroed tensor of n columns: the
// Go statement of what the pb_gen launches leave in device memory.
func genApply(segs []genSegment, data []float32, n int) {
	for _, s := range segs {
		for r := 0; r < s.rows; r++ {
			for c := 0; c < s.cols; c++ {
				data[(s.dstRow0+r)*n+s.dstCol0+c] = s.at(r, c)
			}
		}
	}
}

// fanInScale is a weight matrix's spread 1/√fanIn, as model's newMatrix.
func fanInScale(fanIn int) float32 { return float32(1 / math.Sqrt(float64(fanIn))) }

// genSegments is how g's shard of tensor name in layer is laid out as
// pb_gen launches, following model.Generator.Tensor case by case.
func genSegments(g model.Generator, layer int, name string) ([]genSegment, error) {
	s := g.Shard
	if err := s.Check(); err != nil {
		return nil, err
	}
	H := s.Hidden
	key := func(tensor string) uint64 { return model.KeyBase(g.Seed, layer, tensor) }
	matrix := func(tensor string, fanIn, dstCol0, rows, cols, keyRow0, keyCol0 int) genSegment {
		return genSegment{dstCol0: dstCol0, rows: rows, cols: cols, base: key(tensor), keyRow0: keyRow0, keyCol0: keyCol0, scale: fanInScale(fanIn)}
	}
	vector := func(tensor string, dstCol0, n, keyCol0 int, scale, add float32) genSegment {
		return genSegment{dstCol0: dstCol0, rows: 1, cols: n, base: key(tensor), keyCol0: keyCol0, scale: scale, add: add}
	}
	switch name {
	case model.WQKV:
		ql, kvl := s.AttnWidth(), s.KVWidth()
		return []genSegment{
			matrix(model.WQ, H, 0, H, ql, 0, s.Index*ql),
			matrix(model.WK, H, ql, H, kvl, 0, s.Index*kvl),
			matrix(model.WV, H, ql+kvl, H, kvl, 0, s.Index*kvl),
		}, nil
	case model.WO:
		ql := s.AttnWidth()
		return []genSegment{matrix(model.WO, g.Model.Heads*s.HeadDim, 0, ql, H, s.Index*ql, 0)}, nil
	case model.WUp:
		fl := s.FFN
		names := []string{model.WUp}
		if s.Arch.MLP.Gated() {
			names = []string{model.WGate, model.WUp}
		}
		var segs []genSegment
		for i, n := range names {
			segs = append(segs, matrix(n, H, i*fl, H, fl, 0, s.Index*fl))
		}
		return segs, nil
	case model.WDown:
		fl := s.FFN
		return []genSegment{matrix(model.WDown, g.Model.FFN, 0, fl, H, s.Index*fl, 0)}, nil
	case model.AttnNorm, model.MLPNorm, model.FinalNorm:
		return []genSegment{vector(name, 0, H, 0, genNormNoise, 1)}, nil
	case model.AttnNormBias, model.MLPNormBias, model.FinalNormBias, model.BO, model.BDown:
		return []genSegment{vector(name, 0, H, 0, genBiasNoise, 0)}, nil
	case model.BQKV:
		ql, kvl := s.AttnWidth(), s.KVWidth()
		return []genSegment{
			vector("bq", 0, ql, s.Index*ql, genBiasNoise, 0),
			vector("bk", ql, kvl, s.Index*kvl, genBiasNoise, 0),
			vector("bv", ql+kvl, kvl, s.Index*kvl, genBiasNoise, 0),
		}, nil
	case model.BUp:
		return []genSegment{vector(model.BUp, 0, s.FFN, s.Index*s.FFN, genBiasNoise, 0)}, nil
	case model.PosEmbed:
		return []genSegment{{rows: s.Arch.MaxPositions, cols: H, base: model.KeyBase(g.Seed, -1, model.PosEmbed), scale: genBiasNoise}}, nil
	case model.Embed, model.LMHead:
		valid := max(0, min(s.VocabSize, s.Vocab-s.VocabOffset)) // rows (columns of the head) below the vocabulary
		if valid == 0 {
			return nil, nil
		}
		switch {
		case name == model.Embed:
			return []genSegment{{rows: valid, cols: H, base: model.KeyBase(g.Seed, -1, model.Embed), keyRow0: s.VocabOffset, scale: 1}}, nil
		case s.Arch.Tied: // the embedding shard transposed: element (r, c) is embedding (offset + c, r)
			return []genSegment{{rows: H, cols: valid, base: model.KeyBase(g.Seed, -1, model.Embed), keyRow0: s.VocabOffset, transposed: true, scale: 1}}, nil
		default:
			return []genSegment{{rows: H, cols: valid, base: model.KeyBase(g.Seed, -1, model.LMHead), keyCol0: s.VocabOffset, scale: fanInScale(H)}}, nil
		}
	}
	return nil, fmt.Errorf("model: no tensor %q", name)
}

// genWeights allocates the rank's weight shards and generates them on the
// device with pb_gen, where the second module loaded it and
// Options.HostWeights is off; it reports whether it did (false: the caller
// generates on the host and uploads, as before). It then reads back a
// sample, the first and last element of every launch, and compares it bit
// for bit with the host's statement of the same elements (genSegment.at,
// rounded to the element type): on any difference it says so in
// c.weightSource and fills the same shards from the host generator, so a
// wrong kernel costs start-up time, never wrong weights.
func (c *Compute) genWeights(gen model.Generator) (bool, error) {
	switch {
	case c.opts.HostWeights:
		c.weightSource = "host (Options.HostWeights)"
		return false, nil
	case c.without["device-weights"]:
		c.weightSource = "host (turned off (Options.Without))"
		return false, nil
	case !c.extra.loaded:
		c.weightSource = "host (no second module: " + c.extra.why + ")"
		return false, nil
	}
	if err := c.extraKernel("pb_gen", genSig); err != nil {
		c.weightSource = "host (" + err.Error() + ")"
		return false, nil
	}
	type sample struct {
		p    cuda.DevicePtr
		want float32
		what string
	}
	var samples []sample
	tensors := c.plan.Tensors(c.rank.Rank)
	ptrs := make([]cuda.DevicePtr, len(tensors))
	eb := c.dt.bytes
	for i, ts := range tensors {
		segs, err := genSegments(gen, ts.Layer, ts.Name)
		if err != nil {
			return true, err
		}
		bytes := int64(ts.K) * int64(ts.N) * int64(eb)
		p, err := c.alloc(pexec.AllocWeights, bytes)
		if err != nil {
			return true, err
		}
		ptrs[i] = p
		c.frame.Weights[pexec.TensorKey{Layer: ts.Layer, Name: ts.Name}] = &dtensor{k: ts.K, n: ts.N, p: p}
		if err := c.stream.MemsetD8Async(p, 0, bytes); err != nil {
			return true, err
		}
		for _, s := range segs {
			dst := p + cuda.DevicePtr((s.dstRow0*ts.N+s.dstCol0)*eb)
			transposed := 0
			if s.transposed {
				transposed = 1
			}
			a := c.newArgs().p(dst).i(ts.N).i(s.rows).i(s.cols).u(s.base).i(s.keyRow0).i(s.keyCol0).i(transposed).f(s.scale).f(s.add)
			if err := c.launchShared("pb_gen", cuda.D1(flatBlocks(s.rows*s.cols)), cuda.D1(flatThreads), 0, a); err != nil {
				return true, err
			}
			for _, rc := range [][2]int{{0, 0}, {s.rows - 1, s.cols - 1}} {
				samples = append(samples, sample{p: dst + cuda.DevicePtr((rc[0]*ts.N+rc[1])*eb), want: c.dt.round(s.at(rc[0], rc[1])),
					what: fmt.Sprintf("%s of layer %d, element (%d, %d)", ts.Name, ts.Layer, s.dstRow0+rc[0], s.dstCol0+rc[1])})
			}
		}
	}
	if err := c.stream.Synchronize(); err != nil {
		return true, err
	}
	raw := make([]byte, eb)
	for _, s := range samples {
		if err := c.stream.CopyDtoHAsync(raw, s.p); err != nil {
			return true, err
		}
		if got := c.dt.decode(raw)[0]; math.Float32bits(got) != math.Float32bits(s.want) {
			c.weightSource = fmt.Sprintf("host (the device generated %v for %s, the host generator %v)", got, s.what, s.want)
			return true, c.uploadWeights(gen, tensors, ptrs)
		}
	}
	c.weightSource = fmt.Sprintf("device (pb_gen; %d sampled elements equal the host generator's)", len(samples))
	return true, nil
}

// uploadWeights generates tensors on the host and uploads them into ptrs.
func (c *Compute) uploadWeights(gen model.Generator, tensors []partition.TensorShard, ptrs []cuda.DevicePtr) error {
	for i, ts := range tensors {
		t, err := gen.Tensor(ts.Layer, ts.Name)
		if err != nil {
			return err
		}
		if err := c.upload(ptrs[i], t.Data); err != nil {
			return err
		}
	}
	return c.stream.Synchronize()
}

// WeightSource says where the rank's weights were generated: "device
// (pb_gen; …)" or "host (why)".
func (c *Compute) WeightSource() string { return c.weightSource }
