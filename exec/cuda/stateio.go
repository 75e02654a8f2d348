package cuda

import (
	"fmt"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
)

// The GPU backend's state I/O (exec.StateIO): weights, KV caches, prompts
// and token ids moved between host bytes and device memory with cuMemcpy on
// the rank's stream. Payload elements are in the plan's dtype; where the
// device computes in another (Options.DType), they are converted on the
// host.

var _ pexec.StateIO = (*Compute)(nil)

// wire is the payload's element type (the plan's dtype).
func (c *Compute) wire() (dtype, error) { return lookupDType(c.plan.Model.DType) }

// toDevice converts payload bytes to the device's element type.
func (c *Compute) toDevice(b []byte) ([]byte, error) {
	w, err := c.wire()
	if err != nil || w.name == c.dt.name {
		return b, err
	}
	return c.dt.encode(w.decode(b)), nil
}

// fromDevice converts device bytes to the payload's element type.
func (c *Compute) fromDevice(b []byte) ([]byte, error) {
	w, err := c.wire()
	if err != nil || w.name == c.dt.name {
		return b, err
	}
	return w.encode(c.dt.decode(b)), nil
}

// ready pins the context for a state call, or reports an earlier fault.
func (c *Compute) ready() (func(), error) {
	if c.fault != nil {
		return nil, c.fault
	}
	if c.capturing || c.replay {
		return nil, fmt.Errorf("cuda: state I/O inside a graph segment")
	}
	return c.pin()
}

// ImportWeight replaces the shard (layer, name) with data, [k][n] in the
// plan's dtype.
func (c *Compute) ImportWeight(layer int, name string, data []byte) error {
	t := c.frame.Weights[pexec.TensorKey{Layer: layer, Name: name}]
	if t == nil {
		return fmt.Errorf("cuda: rank %d holds no tensor %q of layer %d", c.rank.Rank, name, layer)
	}
	want := t.k * t.n * c.plan.DTypeBytes
	if len(data) != want {
		return fmt.Errorf("cuda: tensor %q of layer %d is [%d, %d] %s = %d B, got %d B", name, layer, t.k, t.n, c.plan.Model.DType, want, len(data))
	}
	dev, err := c.toDevice(data)
	if err != nil {
		return err
	}
	unpin, err := c.ready()
	if err != nil {
		return err
	}
	defer unpin()
	if err := c.stream.CopyHtoDAsync(t.p, dev); err != nil {
		return err
	}
	return c.stream.Synchronize()
}

// kvSpan checks a KV transfer of tokens positions of layer and returns its
// cache, the sequences and the width of a position's keys (or values).
func (c *Compute) kvSpan(layer, tokens, bytes int) (*dkv, int, int, error) {
	kv := c.kv[layer]
	if kv == nil {
		return nil, 0, 0, fmt.Errorf("cuda: rank %d holds no KV cache of layer %d", c.rank.Rank, layer)
	}
	ctx := c.plan.Config.Workload.Context
	if tokens < 0 || tokens > ctx {
		return nil, 0, 0, fmt.Errorf("cuda: KV cache of layer %d: %d positions outside [0, %d]", layer, tokens, ctx)
	}
	w := c.plan.Shard(c.rank.TPIndex).KVWidth()
	seqs := c.plan.KVElems(c.rank.Rank) / (ctx * w)
	if want := seqs * tokens * int(c.plan.KVTokenBytes(c.rank.TPIndex)); bytes != want {
		return nil, 0, 0, fmt.Errorf("cuda: KV cache of layer %d: %d sequences × %d positions × 2·%d %s = %d B, got %d B",
			layer, seqs, tokens, w, c.plan.Model.DType, want, bytes)
	}
	return kv, seqs, w, nil
}

// ImportKV replaces positions [0, tokens) of every sequence of layer's
// cache from src, [sequence][position][k | v], and clears the positions
// after them: per sequence one copy of its keys, one of its values, and a
// memset of the rest.
func (c *Compute) ImportKV(layer, tokens int, src []byte) error {
	kv, seqs, w, err := c.kvSpan(layer, tokens, len(src))
	if err != nil {
		return err
	}
	dev, err := c.toDevice(src)
	if err != nil {
		return err
	}
	eb := c.dt.bytes
	row := w * eb // one position's keys on the device
	k, v := make([]byte, seqs*tokens*row), make([]byte, seqs*tokens*row)
	for i := 0; i < seqs*tokens; i++ {
		copy(k[i*row:(i+1)*row], dev[2*i*row:])
		copy(v[i*row:(i+1)*row], dev[(2*i+1)*row:])
	}
	unpin, err := c.ready()
	if err != nil {
		return err
	}
	defer unpin()
	ctx := c.plan.Config.Workload.Context
	for s := 0; s < seqs; s++ {
		base := cuda.DevicePtr(s * ctx * row)
		for _, h := range []struct {
			p    cuda.DevicePtr
			host []byte
		}{{kv.k, k}, {kv.v, v}} {
			if err := c.stream.CopyHtoDAsync(h.p+base, h.host[s*tokens*row:(s+1)*tokens*row]); err != nil {
				return err
			}
			if rest := (ctx - tokens) * row; rest > 0 {
				if err := c.stream.MemsetD8Async(h.p+base+cuda.DevicePtr(tokens*row), 0, int64(rest)); err != nil {
					return err
				}
			}
		}
	}
	return c.stream.Synchronize()
}

// ExportKV writes positions [0, tokens) of layer's cache to dst,
// [sequence][position][k | v], after the work queued before it.
func (c *Compute) ExportKV(layer, tokens int, dst []byte) error {
	kv, seqs, w, err := c.kvSpan(layer, tokens, len(dst))
	if err != nil {
		return err
	}
	eb := c.dt.bytes
	row := w * eb
	k, v := make([]byte, seqs*tokens*row), make([]byte, seqs*tokens*row)
	unpin, err := c.ready()
	if err != nil {
		return err
	}
	defer unpin()
	ctx := c.plan.Config.Workload.Context
	for s := 0; s < seqs; s++ {
		base := cuda.DevicePtr(s * ctx * row)
		if err := c.stream.CopyDtoHAsync(k[s*tokens*row:(s+1)*tokens*row], kv.k+base); err != nil {
			return err
		}
		if err := c.stream.CopyDtoHAsync(v[s*tokens*row:(s+1)*tokens*row], kv.v+base); err != nil {
			return err
		}
	}
	if err := c.stream.Synchronize(); err != nil {
		return err
	}
	dev := make([]byte, 2*seqs*tokens*row)
	for i := 0; i < seqs*tokens; i++ {
		copy(dev[2*i*row:(2*i+1)*row], k[i*row:])
		copy(dev[(2*i+1)*row:(2*i+2)*row], v[i*row:])
	}
	out, err := c.fromDevice(dev)
	if err != nil {
		return err
	}
	copy(dst, out)
	return nil
}

// SetPrompt makes Input read prompt positions from tokens, [global
// sequence][prompt position], uploaded once as float32 ids; nil restores
// the seeded prompt (pb_prompt_tokens).
func (c *Compute) SetPrompt(tokens []int32) error {
	if tokens == nil {
		c.promptSet = false
		return nil
	}
	w := c.plan.Config.Workload
	p := c.frame.Prompt
	if len(tokens) != w.Batch*p {
		return fmt.Errorf("cuda: prompt of %d tokens: want %d sequences × %d prompt positions = %d", len(tokens), w.Batch, p, w.Batch*p)
	}
	vocab := model.TokenVocab(c.plan.Model)
	f := make([]float32, len(tokens))
	for i, id := range tokens {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("cuda: prompt token %d (sequence %d, position %d) outside the vocabulary [0, %d)", id, i/p, i%p, vocab)
		}
		f[i] = float32(id)
	}
	unpin, err := c.ready()
	if err != nil {
		return err
	}
	defer unpin()
	if c.promptDev == 0 {
		if c.promptDev, err = c.alloc(pexec.AllocWorkspace, int64(4*len(f))); err != nil {
			return err
		}
	}
	if err := c.stream.CopyHtoDAsync(c.promptDev, cuda.Bytes(f)); err != nil {
		return err
	}
	c.promptSet = true
	return c.stream.Synchronize()
}

// promptTokens writes the tokens of prompt positions [past, past+q) of
// the micro-batch's seqs sequences (from seq0) into its tokens buffer,
// [seq][q], from the prompt SetPrompt uploaded: one device copy per
// sequence.
func (c *Compute) promptTokens(tokens dbuf, seqs, q, seq0, past int) error {
	p := c.frame.Prompt
	if past+q > p {
		return fmt.Errorf("cuda: prompt pass of positions [%d, %d) beyond the prompt's %d", past, past+q, p)
	}
	for s := 0; s < seqs; s++ {
		src := c.promptDev + cuda.DevicePtr(4*((seq0+s)*p+past))
		if err := c.stream.CopyDtoDAsync(tokens.p+cuda.DevicePtr(4*s*q), src, int64(4*q)); err != nil {
			return err
		}
	}
	return nil
}

// WriteTokens sets the ids micro-batch mb's next decode pass reads (one
// per sequence of the micro-batch), float32 in its tokens buffer.
func (c *Compute) WriteTokens(mb int, ids []int32) error {
	b, err := c.frame.Buffer(model.Tokens, mb, len(ids))
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	f := make([]float32, len(ids))
	for i, id := range ids {
		f[i] = float32(id)
	}
	unpin, err := c.ready()
	if err != nil {
		return err
	}
	defer unpin()
	if err := c.stream.CopyHtoDAsync(b.p, cuda.Bytes(f)); err != nil {
		return err
	}
	return c.stream.Synchronize()
}
