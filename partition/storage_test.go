package partition

import (
	"fmt"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/model"
)

// storageProblems walks a Program with buffers kept in the storage
// storage names and reports the first op that reads a buffer whose
// storage another buffer overwrote since it was written, or that reads
// and writes two buffers of one storage (an op is not in place unless its
// In and Out are the same buffer).
func storageProblems(prog Program, storage func(model.Buf) model.Buf) error {
	type key struct {
		mb  int
		buf model.Buf
	}
	holds := map[key]model.Buf{} // (micro-batch, storage) → the buffer last written there
	for i, op := range prog.Ops {
		in, out := op.In, op.Out
		if in != model.NoBuf && out != model.NoBuf && in != out && storage(in) == storage(out) {
			return fmt.Errorf("op %d %s reads %s and writes %s, which share storage", i, op.Name, in, out)
		}
		if in != model.NoBuf {
			if h, ok := holds[key{op.Microbatch, storage(in)}]; ok && h != in {
				return fmt.Errorf("op %d %s reads %s after %s was written into its storage", i, op.Name, in, h)
			}
		}
		if out != model.NoBuf {
			holds[key{op.Microbatch, storage(out)}] = out
		}
	}
	return nil
}

// The buffers that share storage (StorageOf) are never live at once in
// any Program of any embedded config: each is read only while its storage
// still holds what it wrote. A storage that would overlap the attention's
// input and output is caught.
func TestSharedStorageIsDeadWhenReused(t *testing.T) {
	var names []string
	names = append(names, configs.Presets("")...)
	for _, n := range configs.Presets("test") {
		names = append(names, "test/"+n)
	}
	for _, name := range names {
		p := plan(t, name)
		for r := range p.Ranks {
			for _, ph := range []Phase{Prefill, Decode} {
				if err := storageProblems(p.Program(r, ph), StorageOf); err != nil {
					t.Errorf("%s rank %d %v: %v", name, r, ph, err)
				}
			}
		}
	}
	wrong := func(b model.Buf) model.Buf {
		if b == model.AO {
			return model.QKV
		}
		return StorageOf(b)
	}
	if err := storageProblems(plan(t, "test/single-tiny").Program(0, Prefill), wrong); err == nil {
		t.Error("ao sharing qkv's storage passed the walk")
	}
}

// One micro-batch's activation bytes are its buffers' allocations: for
// test/single-tiny's decode (one token per sequence), by hand from its
// shape.
func TestActivationBytesAreTheAllocations(t *testing.T) {
	p := plan(t, "test/single-tiny")
	r := p.RankAt(0)
	s := p.Shard(0)
	rows := p.MicrobatchSize
	// x, h, y of hidden width; qkv and u in one region, ao and a in another;
	// token ids as float32; logits over the vocabulary shard (TP 1: no
	// gathered region).
	elems := rows * (3*s.Hidden + max(s.QKVWidth(), s.UpWidth()) + max(s.AttnWidth(), s.ActWidth()))
	want := int64(elems)*int64(p.DTypeBytes) + int64(rows)*4
	if p.Model.LMHead {
		want += int64(p.MicrobatchSize*s.VocabSize) * int64(p.DTypeBytes)
	}
	if got := p.activationBytes(r, rows); got != want {
		t.Errorf("decode activations %d B, want %d", got, want)
	}
	var sum int64
	for b, n := range p.BufferAllocs(0) {
		sum += p.BufferBytes(b, n)
	}
	if got := p.activationBytes(r, p.MicrobatchSize*max(p.PrefillChunk, 1)); got != sum {
		t.Errorf("largest pass %d B, BufferAllocs sum to %d", got, sum)
	}
}
