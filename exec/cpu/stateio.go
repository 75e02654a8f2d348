package cpu

import (
	"encoding/binary"
	"fmt"
	"math"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
)

// The CPU backend's state I/O: float32 elements, little-endian.

var _ pexec.StateIO = (*Compute)(nil)

func putF32(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func getF32(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// ImportWeight replaces the shard (layer, name) with data, float32 [k][n].
func (c *Compute) ImportWeight(layer int, name string, data []byte) error {
	t := c.frame.Weights[pexec.TensorKey{Layer: layer, Name: name}]
	if t == nil {
		return fmt.Errorf("cpu: rank %d holds no tensor %q of layer %d", c.rank.Rank, name, layer)
	}
	if len(data) != 4*len(t.Data) {
		return fmt.Errorf("cpu: tensor %q of layer %d is [%d, %d] float32 = %d B, got %d B", name, layer, t.K, t.N, 4*len(t.Data), len(data))
	}
	getF32(t.Data, data)
	return nil
}

// kvSpan checks a KV transfer of tokens positions of layer and returns its
// cache and the number of sequences.
func (c *Compute) kvSpan(layer, tokens, bytes int) (*kvCache, int, error) {
	kv := c.kv[layer]
	if kv == nil {
		return nil, 0, fmt.Errorf("cpu: rank %d holds no KV cache of layer %d", c.rank.Rank, layer)
	}
	if tokens < 0 || tokens > kv.context {
		return nil, 0, fmt.Errorf("cpu: KV cache of layer %d: %d positions outside [0, %d]", layer, tokens, kv.context)
	}
	seqs := len(kv.k) / (kv.context * kv.width)
	if want := seqs * tokens * 2 * kv.width * 4; bytes != want {
		return nil, 0, fmt.Errorf("cpu: KV cache of layer %d: %d sequences × %d positions × 2·%d float32 = %d B, got %d B",
			layer, seqs, tokens, kv.width, want, bytes)
	}
	return kv, seqs, nil
}

// ImportKV replaces positions [0, tokens) of layer's cache from src,
// [sequence][position][k | v], and clears the positions after them.
func (c *Compute) ImportKV(layer, tokens int, src []byte) error {
	kv, seqs, err := c.kvSpan(layer, tokens, len(src))
	if err != nil {
		return err
	}
	w := kv.width
	for s := 0; s < seqs; s++ {
		for p := 0; p < kv.context; p++ {
			k, v := kv.at(kv.k, s, p), kv.at(kv.v, s, p)
			if p >= tokens {
				clear(k)
				clear(v)
				continue
			}
			o := ((s*tokens + p) * 2 * w) * 4
			getF32(k, src[o:])
			getF32(v, src[o+4*w:])
		}
	}
	return nil
}

// ExportKV writes positions [0, tokens) of layer's cache to dst,
// [sequence][position][k | v].
func (c *Compute) ExportKV(layer, tokens int, dst []byte) error {
	kv, seqs, err := c.kvSpan(layer, tokens, len(dst))
	if err != nil {
		return err
	}
	w := kv.width
	for s := 0; s < seqs; s++ {
		for p := 0; p < tokens; p++ {
			o := ((s*tokens + p) * 2 * w) * 4
			putF32(dst[o:], kv.at(kv.k, s, p))
			putF32(dst[o+4*w:], kv.at(kv.v, s, p))
		}
	}
	return nil
}

// SetPrompt makes Input read prompt positions from tokens, [global
// sequence][prompt position], as the run's model.Inputs (greedy feedback, if
// the Compute was made with it, is kept); nil restores the seeded prompt.
func (c *Compute) SetPrompt(tokens []int32) error {
	greedy := c.inputs != nil && c.inputs.Greedy
	if tokens == nil {
		c.inputs = nil
		if greedy {
			c.inputs = &model.Inputs{Greedy: true}
		}
		return nil
	}
	var seqs int
	for _, kv := range c.kv {
		seqs = len(kv.k) / (kv.context * kv.width)
		break
	}
	p := c.frame.Prompt
	if len(tokens) != seqs*p {
		return fmt.Errorf("cpu: prompt of %d tokens: want %d sequences × %d prompt positions = %d", len(tokens), seqs, p, seqs*p)
	}
	prompts := make([][]int, seqs)
	for s := range prompts {
		prompts[s] = make([]int, p)
		for i := range prompts[s] {
			prompts[s][i] = int(tokens[s*p+i])
		}
	}
	c.inputs = &model.Inputs{Prompts: prompts, Greedy: greedy}
	return nil
}

// WriteTokens sets the ids micro-batch mb's next decode pass reads.
func (c *Compute) WriteTokens(mb int, ids []int32) error {
	b, err := c.frame.Buffer(model.Tokens, mb, len(ids))
	if err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	for i, id := range ids {
		b[i] = float32(id)
	}
	return nil
}
