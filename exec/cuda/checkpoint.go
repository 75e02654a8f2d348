package cuda

import (
	"fmt"
	"math"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Checkpoint is this backend's part of the Hugging Face workflow (exec/hf):
// ranks on opts.Device computing in opts.DType ("": fp32) whose weights are
// the checkpoint's slices (Options.Weights) and whose token ids are the
// prompts' and then the greedy argmax (Options.Inputs), op by op (no
// graphs: every sample is read back to choose the next id). In one process
// the ranks talk through newComms(size) staged via the host (StagedComms);
// launched ranks through newComm (nil: in-process only). The caller
// supplies the communicators, so this backend imports no other.
func Checkpoint(opts Options, newComms func(size int) []pexec.Comm, newComm hf.NewCommFunc) hf.Backend {
	dt := opts.DType
	if dt == "" {
		dt = "fp32"
	}
	opts.DType, opts.Graphs = dt, false
	return hf.Backend{
		Name: "cuda", DType: dt,
		NewCompute: func(plan *partition.Plan, rank int, weights hf.Weights, in *model.Inputs) (pexec.Compute, error) {
			o := opts
			o.Weights, o.Inputs = weights, in
			return New(plan, rank, o)
		},
		NewComms:           func(size int) []pexec.Comm { return StagedComms(newComms(size)) },
		NewComm:            newComm,
		Tolerance:          Tolerance(dt),
		ReferenceTolerance: ReferenceTolerance(dt),
		LaunchedDType:      dt,
	}
}

// ReferenceTolerance bounds |gpu − reference| / max(1, |reference|) of
// logits computed in dtype against an independent fp32 implementation's
// (transformers' reference.json): docs/numerics.md, "Checkpoints against
// transformers". In fp32 it is 1e-3, which covers cuBLAS's split-K
// reordering at 7B widths; in fp16 and bf16 Tolerance's storage bound,
// beside which the reference's own fp32 error (1e-4) is negligible.
func ReferenceTolerance(dtype string) float64 {
	switch dtype {
	case "fp16", "bf16":
		return Tolerance(dtype)
	}
	return 1e-3
}

// sourceWeights uploads the rank's shards from Options.Weights: each shard
// is read from the checkpoint's mapping (only the rows or columns the rank
// holds, as float32: checkpoint/shards.Source) by a reader goroutine one shard
// ahead, converted on the host to the element type with the same
// converters as every upload (f32ToF16, f32ToBF16: round to nearest even)
// into a pinned staging buffer the size of the largest shard, and copied to
// the device asynchronously; the stream is synchronized before the buffer
// is written again. Reading the next shard overlaps the conversion and the
// copy of this one. The host holds at most three shards in float32 (being
// read, read, being converted) and one in the element type, never the
// model. Only this goroutine calls CUDA.
func (c *Compute) sourceWeights() error {
	src, err := c.opts.Weights(c.plan.Shard(c.rank.TPIndex))
	if err != nil {
		return err
	}
	tensors := c.plan.Tensors(c.rank.Rank)
	eb := int64(c.dt.bytes)
	var most int64
	for _, ts := range tensors {
		most = max(most, int64(ts.K)*int64(ts.N)*eb)
	}
	c.weightSource = fmt.Sprintf("checkpoint (converted on the host, through a pinned buffer of %d B: the largest shard)", most)
	if most == 0 {
		return nil
	}
	pin, err := c.drv.MemHostAlloc(most, 0)
	if err != nil {
		return fmt.Errorf("pinned staging buffer of %d B for the checkpoint's shards: %w", most, err)
	}
	type shard struct {
		t   *model.Tensor
		err error
	}
	read := make(chan shard, 1)
	stop := make(chan struct{})
	go func() {
		defer close(read)
		for _, ts := range tensors {
			t, err := src.Tensor(ts.Layer, ts.Name)
			select {
			case read <- shard{t, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	err = func() error {
		for i, ts := range tensors {
			sh, ok := <-read
			if !ok {
				return fmt.Errorf("tensor %q of layer %d: the reader stopped", ts.Name, ts.Layer)
			}
			t := sh.t
			if sh.err != nil {
				return sh.err
			}
			if t.K != ts.K || t.N != ts.N || len(t.Data) != ts.K*ts.N {
				return fmt.Errorf("tensor %q of layer %d read as [%d, %d] (%d values), the shard is [%d, %d]", ts.Name, ts.Layer, t.K, t.N, len(t.Data), ts.K, ts.N)
			}
			n := int64(len(t.Data)) * eb
			p, err := c.alloc(pexec.AllocWeights, n)
			if err != nil {
				return err
			}
			if i > 0 {
				// The previous shard's copy still reads the buffer.
				if err := c.stream.Synchronize(); err != nil {
					return err
				}
			}
			buf := pin.Bytes()[:n]
			c.dt.encodeInto(buf, t.Data)
			if err := c.stream.CopyHtoDAsync(p, buf); err != nil {
				return err
			}
			c.frame.Weights[pexec.TensorKey{Layer: ts.Layer, Name: ts.Name}] = &dtensor{k: t.K, n: t.N, p: p}
		}
		return nil
	}()
	close(stop) // a reader still ahead stops after its shard
	// The last copy reads the pinned buffer until the stream has run it.
	if serr := c.stream.Synchronize(); err == nil {
		err = serr
	}
	if ferr := pin.Free(); err == nil {
		err = ferr
	}
	return err
}

// encodeInto writes v in the element type to dst (len(v)·bytes), as encode.
func (d dtype) encodeInto(dst []byte, v []float32) {
	switch d.bytes {
	case 4:
		dst = dst[:4*len(v)]
		for i, f := range v {
			putU32(dst[4*i:], math.Float32bits(f))
		}
	default:
		conv := f32ToF16
		if d.name == "bf16" {
			conv = f32ToBF16
		}
		dst = dst[:2*len(v)]
		for i, f := range v {
			h := conv(f)
			dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
		}
	}
}

// initInputs uploads Options.Inputs' prompt ids of the positions the
// prefill reads (SetPrompt's layout: [global sequence][prefill position]);
// the positions after them come through the tokens buffer (feedInputs).
func (c *Compute) initInputs() error {
	in := c.opts.Inputs
	if in == nil {
		return nil
	}
	if c.opts.Graphs {
		return fmt.Errorf("Options.Inputs with Graphs: every sample is read back to choose the next id, which a graph cannot do")
	}
	batch, p := c.plan.Config.Workload.Batch, c.frame.Prompt
	vocab := model.TokenVocab(c.plan.Model)
	ids := make([]float32, batch*p)
	for s := 0; s < batch; s++ {
		for j := 0; j < p; j++ {
			id := in.Token(c.seed, s, j, vocab, -1)
			if id < 0 || id >= vocab {
				return fmt.Errorf("prompt id %d (sequence %d, position %d) outside the vocabulary [0, %d)", id, s, j, vocab)
			}
			ids[s*p+j] = float32(id)
		}
	}
	var err error
	if c.promptDev, err = c.alloc(pexec.AllocWorkspace, int64(4*len(ids))); err != nil {
		return err
	}
	if err := c.stream.CopyHtoDAsync(c.promptDev, idBytes(ids)); err != nil {
		return err
	}
	c.promptSet = true
	return c.stream.Synchronize()
}

// feedInputs writes the ids the sequences [seq0, seq0+seqs) read at
// position pos (the next pass's first) into tokens: Options.Inputs' prompt
// id, else the argmax pb_argmax wrote to st.sampled when greedy (read back
// after the queued work), else the seeded schedule's, as exec/cpu's Sample.
func (c *Compute) feedInputs(st *mbState, tokens dbuf, seqs, seq0, pos, vocab int) error {
	if c.capturing || c.replay {
		return fmt.Errorf("cuda: Options.Inputs inside a graph segment")
	}
	raw := make([]byte, 4*seqs)
	if err := c.stream.CopyDtoHAsync(raw, st.sampled); err != nil {
		return err
	}
	if err := c.stream.Synchronize(); err != nil {
		return err
	}
	ids := make([]float32, seqs)
	for i := range ids {
		argmax := int(int32(getU32(raw[4*i:])))
		ids[i] = float32(c.opts.Inputs.Token(c.seed, seq0+i, pos, vocab, argmax))
	}
	if err := c.stream.CopyHtoDAsync(tokens.p, idBytes(ids)); err != nil {
		return err
	}
	return c.stream.Synchronize()
}

// idBytes is v's little-endian bytes.
func idBytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	dtypes["fp32"].encodeInto(out, v)
	return out
}
