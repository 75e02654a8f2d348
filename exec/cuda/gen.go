package cuda

import (
	_ "embed" // gen.cu
	"fmt"
	"math"

	"github.com/partbench/partbench/model"
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
