package cuda

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

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

// DefaultHostWindowBytes is the float32 bytes of checkpoint tensors the
// host-weights load reads ahead at once (Options.HostWindowBytes): 1 GiB, so
// that a rank holds at most 2 GiB of its weights in host memory (a 7B model
// at TP 1 is 28 GB in float32) while each window is still read as one list
// of hundreds of MB (checkpoint.ReadSlices plans its reads across the
// window's tensors).
const DefaultHostWindowBytes = 1 << 30

// hostWindows cuts the rank's list into consecutive windows whose float32
// bytes are at most budget each; a tensor larger than budget is a window of
// its own.
func hostWindows(tensors []partition.TensorShard, budget int64) [][]partition.TensorShard {
	var out [][]partition.TensorShard
	var cur []partition.TensorShard
	var bytes int64
	for _, ts := range tensors {
		b := shardF32Bytes([]partition.TensorShard{ts})
		if len(cur) > 0 && bytes+b > budget {
			out, cur, bytes = append(out, cur), nil, 0
		}
		cur, bytes = append(cur, ts), bytes+b
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// shardF32Bytes is the float32 bytes of the shards listed.
func shardF32Bytes(list []partition.TensorShard) int64 {
	var n int64
	for _, ts := range list {
		n += 4 * int64(ts.K) * int64(ts.N)
	}
	return n
}

// prefetcher is a Source that reads a list of tensors at once
// (checkpoint/shards.Source), then hands each out once.
type prefetcher interface {
	Prefetch([]partition.TensorShard) error
}

// sourceWeights uploads the rank's shards from Options.Weights. A reader
// goroutine reads the rank's list in windows (hostWindows: float32 bytes
// at most Options.HostWindowBytes each), each window's tensors with one
// Prefetch where the Source has it (one checkpoint.ReadSlices planned across
// the window's tensors: only the rows or columns the rank holds, converted
// to float32 and laid out), else tensor by tensor; it reads the next window
// while this one is uploaded, then waits for it to be taken. The uploader
// takes the tensors in order, converts each on the host to the element
// type with the same converters as every upload (f32ToF16, f32ToBF16: round
// to nearest even; a large shard on every core, encodeParallel) into a
// pinned staging buffer the size of the largest shard, copies it to the device asynchronously (the stream is
// synchronized before the buffer is written again) and lets the float32
// tensor go. The host holds at most two windows of float32 (the one being
// uploaded and the next) and one shard in the element type, never the
// model; c.hostPeakBytes is the most it held. Only this goroutine calls
// CUDA.
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
	budget := c.opts.HostWindowBytes
	if budget <= 0 {
		budget = DefaultHostWindowBytes
	}
	windows := hostWindows(tensors, budget)
	c.weightSource = fmt.Sprintf("checkpoint (read in %d windows of at most %d B of float32, converted on the host, through a pinned buffer of %d B: the largest shard)", len(windows), budget, most)
	if most == 0 {
		return nil
	}
	pin, err := c.drv.MemHostAlloc(most, 0)
	if err != nil {
		return fmt.Errorf("pinned staging buffer of %d B for the checkpoint's shards: %w", most, err)
	}
	type window struct {
		ts  []*model.Tensor
		err error
	}
	var held, peak atomic.Int64 // float32 bytes read and not yet uploaded
	read := make(chan window)   // unbuffered: one window read ahead, no more
	stop := make(chan struct{})
	go func() {
		defer close(read)
		pre, canPrefetch := src.(prefetcher)
		for _, list := range windows {
			var w window
			// Counted before it is read: the window's buffers are made as it is.
			h := held.Add(shardF32Bytes(list))
			peak.Store(max(peak.Load(), h)) // only this goroutine raises held
			if canPrefetch {
				w.err = pre.Prefetch(list)
			}
			for _, ts := range list {
				if w.err != nil {
					break
				}
				var t *model.Tensor
				if t, w.err = src.Tensor(ts.Layer, ts.Name); w.err == nil {
					w.ts = append(w.ts, t)
				}
			}
			select {
			case read <- w:
			case <-stop:
				return
			}
			if w.err != nil {
				return
			}
		}
	}()
	err = func() error {
		i := 0
		for _, list := range windows {
			w, ok := <-read
			if !ok {
				return fmt.Errorf("tensor %q of layer %d: the reader stopped", list[0].Name, list[0].Layer)
			}
			for j, t := range w.ts {
				ts := list[j]
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
				c.dt.encodeParallel(buf, t.Data)
				if err := c.stream.CopyHtoDAsync(p, buf); err != nil {
					return err
				}
				c.frame.Weights[pexec.TensorKey{Layer: ts.Layer, Name: ts.Name}] = &dtensor{k: t.K, n: t.N, p: p}
				w.ts[j] = nil // staged: the float32 tensor can go
				held.Add(-shardF32Bytes(list[j : j+1]))
				i++
			}
			if w.err != nil {
				return w.err
			}
		}
		return nil
	}()
	close(stop) // a reader still ahead stops after its window
	c.hostPeakBytes = peak.Load()
	// The last copy reads the pinned buffer until the stream has run it.
	if serr := c.stream.Synchronize(); err == nil {
		err = serr
	}
	if ferr := pin.Free(); err == nil {
		err = ferr
	}
	return err
}

// encodeParallelElems is the values from which encodeParallel splits its
// work among goroutines (1 Mi values: a millisecond or more of work against
// microseconds to start them).
const encodeParallelElems = 1 << 20

// encodeParallel is encodeInto split into blocks of at least
// encodeParallelElems values among up to GOMAXPROCS goroutines: a rank's
// checkpoint load encodes every weight on the host, on the goroutine that
// calls CUDA, while the reader's goroutines wait for the window to be taken.
func (d dtype) encodeParallel(dst []byte, v []float32) {
	workers := min(runtime.GOMAXPROCS(0), len(v)/encodeParallelElems)
	if workers < 2 {
		d.encodeInto(dst, v)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(v)/workers, (w+1)*len(v)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.encodeInto(dst[lo*d.bytes:hi*d.bytes], v[lo:hi])
		}()
	}
	wg.Wait()
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
