package model

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/partbench/partbench/configs"
)

// Tensor is a rank's shard, row-major [K][N] (a vector has K = 1).
type Tensor struct {
	K, N int
	Data []float32
}

func newTensor(k, n int) *Tensor { return &Tensor{K: k, N: n, Data: make([]float32, k*n)} }

// Source makes one rank's weight shards: the seeded Generator, or a
// checkpoint's slices (Checkpoint). name is one of Shard.TensorShape's.
type Source interface {
	Tensor(layer int, name string) (*Tensor, error)
}

var _ Source = Generator{}

// Generator makes one rank's shards of the seeded full model.
type Generator struct {
	Seed  int64
	Model configs.Model // the full model: fan-ins
	Shard Shard
}

// Tensor generates the rank's shard of a tensor (a name of TensorShape) in
// layer (−1 outside the transformer layers).
func (g Generator) Tensor(layer int, name string) (*Tensor, error) {
	s := g.Shard
	if err := s.Check(); err != nil {
		return nil, err
	}
	var t *Tensor
	switch name {
	case WQKV:
		t = g.wqkv(layer)
	case WO:
		t = g.wo(layer)
	case WUp:
		t = g.wUp(layer)
	case WDown:
		t = g.wDown(layer)
	case AttnNorm, MLPNorm, FinalNorm:
		t = g.norm(layer, name)
	case AttnNormBias, MLPNormBias, FinalNormBias, BO, BDown:
		t = g.bias(layer, name, 0, s.Hidden)
	case BQKV:
		t = g.bqkv(layer)
	case BUp:
		t = g.bias(layer, BUp, s.Index*s.FFN, s.FFN)
	case PosEmbed:
		t = g.posEmbed()
	case Embed:
		t = g.embed()
	case LMHead:
		if s.Arch.Tied {
			t = g.tiedHead()
		} else {
			t = g.lmHead()
		}
	default:
		return nil, fmt.Errorf("model: no tensor %q", name)
	}
	if k, n, _ := s.TensorShape(name); t.K != k || t.N != n {
		return nil, fmt.Errorf("model: %s generated as [%d, %d], the shard is [%d, %d]", name, t.K, t.N, k, n)
	}
	return t, nil
}

// wqkv is the column-parallel QKV shard: [hidden, (hl + 2·kvl)·hd] with
// columns [q of query heads t·hl… | k of kv heads t·kvl… | v of the same].
func (g Generator) wqkv(layer int) *Tensor {
	s := g.Shard
	H := s.Hidden
	ql, kvl := s.AttnWidth(), s.KVWidth()
	w := newTensor(H, s.QKVWidth())
	parts := []struct {
		m     matrix
		off   int // first full column
		width int
	}{
		{newMatrix(g.Seed, layer, WQ, H), s.Index * ql, ql},
		{newMatrix(g.Seed, layer, WK, H), s.Index * kvl, kvl},
		{newMatrix(g.Seed, layer, WV, H), s.Index * kvl, kvl},
	}
	for r := 0; r < H; r++ {
		c := 0
		for _, p := range parts {
			for j := 0; j < p.width; j++ {
				w.Data[r*w.N+c] = p.m.at(r, p.off+j)
				c++
			}
		}
	}
	return w
}

// wo is the row-parallel output projection: rows of the rank's query heads.
func (g Generator) wo(layer int) *Tensor {
	s := g.Shard
	H, ql := s.Hidden, s.AttnWidth()
	m := newMatrix(g.Seed, layer, WO, g.Model.Heads*s.HeadDim)
	w := newTensor(ql, H)
	for r := 0; r < ql; r++ {
		for c := 0; c < H; c++ {
			w.Data[r*H+c] = m.at(s.Index*ql+r, c)
		}
	}
	return w
}

// wUp is the column-parallel up projection: [hidden, fl] columns
// [t·fl, (t+1)·fl) of w_up, preceded by the same columns of w_gate when the
// MLP is gated ([gate shard | up shard]).
func (g Generator) wUp(layer int) *Tensor {
	s := g.Shard
	H, fl := s.Hidden, s.FFN
	names := []string{WUp}
	if s.Arch.MLP.Gated() {
		names = []string{WGate, WUp}
	}
	w := newTensor(H, len(names)*fl)
	for i, name := range names {
		m := newMatrix(g.Seed, layer, name, H)
		for r := 0; r < H; r++ {
			for j := 0; j < fl; j++ {
				w.Data[r*w.N+i*fl+j] = m.at(r, s.Index*fl+j)
			}
		}
	}
	return w
}

// wDown is the row-parallel down projection: rows [t·fl, (t+1)·fl).
func (g Generator) wDown(layer int) *Tensor {
	s := g.Shard
	H, fl := s.Hidden, s.FFN
	m := newMatrix(g.Seed, layer, WDown, g.Model.FFN)
	w := newTensor(fl, H)
	for r := 0; r < fl; r++ {
		for c := 0; c < H; c++ {
			w.Data[r*H+c] = m.at(s.Index*fl+r, c)
		}
	}
	return w
}

// norm is a replicated norm vector.
func (g Generator) norm(layer int, name string) *Tensor {
	w := newTensor(1, g.Shard.Hidden)
	for i := range w.Data {
		w.Data[i] = NormWeight(g.Seed, layer, name, i)
	}
	return w
}

// biasNoise is the spread of seeded biases around 0.
const biasNoise = 0.1

// bias is columns [off, off+n) of a full bias vector: 0.1·u, u uniform in [−1, 1).
func (g Generator) bias(layer int, name string, off, n int) *Tensor {
	w := newTensor(1, n)
	for i := range w.Data {
		w.Data[i] = biasNoise * Uniform(g.Seed, layer, name, 0, off+i)
	}
	return w
}

// bqkv is the QKV bias shard, its columns split like wqkv's: the rank's q
// heads, then its k and v heads, of full vectors bq, bk, bv.
func (g Generator) bqkv(layer int) *Tensor {
	s := g.Shard
	ql, kvl := s.AttnWidth(), s.KVWidth()
	var data []float32
	for _, p := range []struct {
		name     string
		off, len int
	}{{"bq", s.Index * ql, ql}, {"bk", s.Index * kvl, kvl}, {"bv", s.Index * kvl, kvl}} {
		data = append(data, g.bias(layer, p.name, p.off, p.len).Data...)
	}
	return &Tensor{K: 1, N: len(data), Data: data}
}

// posEmbed is the learned position embedding, replicated: 0.1·u per element.
func (g Generator) posEmbed() *Tensor {
	s := g.Shard
	w := newTensor(s.Arch.MaxPositions, s.Hidden)
	for p := 0; p < w.K; p++ {
		for c := 0; c < w.N; c++ {
			w.Data[p*w.N+c] = biasNoise * Uniform(g.Seed, -1, PosEmbed, p, c)
		}
	}
	return w
}

// tiedHead is the LM head shard of a tied model: the rank's embedding rows,
// transposed to [hidden, vocab shard].
func (g Generator) tiedHead() *Tensor {
	return Transpose(g.embed())
}

// Transpose is t as [N][K]: in tiles of transposeTile × transposeTile, so
// both sides stay in cache, the tile rows of out split among GOMAXPROCS
// goroutines once the tensor is large enough to pay for them (checkpoint
// loading transposes every linear of a model).
func Transpose(t *Tensor) *Tensor {
	out := newTensor(t.N, t.K)
	K, N := t.K, t.N
	bands := (N + transposeTile - 1) / transposeTile // tile rows of out
	tr := func(b0, b1 int) {
		for c0 := b0 * transposeTile; c0 < min(b1*transposeTile, N); c0 += transposeTile {
			c1 := min(c0+transposeTile, N)
			for r0 := 0; r0 < K; r0 += transposeTile {
				r1 := min(r0+transposeTile, K)
				for c := c0; c < c1; c++ {
					o := out.Data[c*K : c*K+K]
					for r := r0; r < r1; r++ {
						o[r] = t.Data[r*N+c]
					}
				}
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), bands)
	if workers < 2 || K*N < transposeParallelElems {
		tr(0, bands)
		return out
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr(w*bands/workers, (w+1)*bands/workers)
		}()
	}
	wg.Wait()
	return out
}

const (
	transposeTile = 64
	// transposeParallelElems is the size from which Transpose splits its
	// work among goroutines (1 Mi elements: 4 MiB of float32, a few
	// milliseconds of work against microseconds to start them).
	transposeParallelElems = 1 << 20
)

// embed is the vocab-parallel embedding shard: rows [off, off+size) of
// [Vp, hidden], uniform in [−1, 1); rows ≥ vocab are zero.
func (g Generator) embed() *Tensor {
	s := g.Shard
	H := s.Hidden
	w := newTensor(s.VocabSize, H)
	base := KeyBase(g.Seed, -1, Embed)
	for r := 0; r < s.VocabSize; r++ {
		v := s.VocabOffset + r
		if v >= s.Vocab {
			continue
		}
		for c := 0; c < H; c++ {
			w.Data[r*H+c] = Unit(KeyAt(base, v, c))
		}
	}
	return w
}

// lmHead is the vocab-parallel LM head shard: columns [off, off+size) of
// [hidden, Vp]; columns ≥ vocab are zero.
func (g Generator) lmHead() *Tensor {
	s := g.Shard
	H, vl := s.Hidden, s.VocabSize
	m := newMatrix(g.Seed, -1, LMHead, H)
	w := newTensor(H, vl)
	for r := 0; r < H; r++ {
		for j := 0; j < vl; j++ {
			if v := s.VocabOffset + j; v < s.Vocab {
				w.Data[r*vl+j] = m.at(r, v)
			}
		}
	}
	return w
}

// Shape is [K][N].
func (t *Tensor) Shape() (k, n int) { return t.K, t.N }
