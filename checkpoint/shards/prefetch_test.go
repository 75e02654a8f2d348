package shards

import (
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/partition"
)

// TestCheckpointPrefetchMatchesPerTensor: every tensor of every rank of
// TP 1, 2 and 4 plans (TP 4 of GPT-2 only: llama-tiny's 2 KV heads do
// not split 4 ways; and TP 2 × PP 2, whose stages hold the embedding or
// the LM head) of both fixtures, read with one Prefetch over the rank's
// whole list and then Tensor, equals element by element the same tensor
// read alone by a fresh Source (Tensor without Prefetch), whose values
// exec/hf's tests compare with transformers' logits. This covers the
// tensors made of several slices (Llama's q, k and v rows interleaved and
// joined, gate | up, GPT-2's three column ranges of the fused c_attn and
// of its bias, the tied LM head sharing the embedding's rows). The list is
// passed in reverse with its first tensor repeated: the order served must
// not matter, and a repeat is read once. Afterwards nothing is held.
func TestCheckpointPrefetchMatchesPerTensor(t *testing.T) {
	eachRank(t, nil, func(r fixtureRank) {
		what, w, hf, shard, list := r.what, r.w, r.hf, r.shard, r.list
		if len(list) == 0 {
			t.Fatalf("%s: no tensors", what)
		}
		rev := slices.Clone(list)
		slices.Reverse(rev)
		rev = append(rev, list[0])
		pre := New(w, hf, shard)
		if err := pre.Prefetch(rev); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(pre.fetched) != len(list) {
			t.Fatalf("%s: %d tensors held after Prefetch, want %d", what, len(pre.fetched), len(list))
		}
		one := New(w, hf, shard)
		for _, ts := range list {
			got, err := pre.Tensor(ts.Layer, ts.Name)
			if err != nil {
				t.Fatalf("%s: prefetched %s of layer %d: %v", what, ts.Name, ts.Layer, err)
			}
			want, err := one.Tensor(ts.Layer, ts.Name)
			if err != nil {
				t.Fatalf("%s: %s of layer %d alone: %v", what, ts.Name, ts.Layer, err)
			}
			if got.K != want.K || got.N != want.N || got.K != ts.K || got.N != ts.N {
				t.Fatalf("%s: %s of layer %d is [%d, %d] prefetched, [%d, %d] alone, the plan's [%d, %d]", what, ts.Name, ts.Layer, got.K, got.N, want.K, want.N, ts.K, ts.N)
			}
			for i := range want.Data {
				if got.Data[i] != want.Data[i] {
					t.Fatalf("%s: %s of layer %d element %d: %v prefetched, %v alone", what, ts.Name, ts.Layer, i, got.Data[i], want.Data[i])
				}
			}
		}
		if len(pre.fetched) != 0 {
			t.Fatalf("%s: %d tensors still held after each was handed out", what, len(pre.fetched))
		}
		// Handed out once: asked again, the tensor is read alone.
		again, err := pre.Tensor(list[0].Layer, list[0].Name)
		if err != nil || len(again.Data) != list[0].K*list[0].N {
			t.Fatalf("%s: %s asked again: %v", what, list[0].Name, err)
		}
	})
}

// TestCheckpointPrefetchErrors: a listed tensor the family lacks, or one
// whose checkpoint tensor is missing, fails Prefetch naming it, and nothing
// is held.
func TestCheckpointPrefetchErrors(t *testing.T) {
	dir := checkpointtest.Dir(t, "gpt2-tiny")
	hf, w := openDir(t, dir)
	plan := planOf(t, dir, 1, 1)
	list := plan.Tensors(0)
	more := *hf
	more.Layers = 3 // layer 2 is not in the file
	for _, c := range []struct {
		cfg  *checkpoint.Config
		add  partition.TensorShard
		want []string
	}{
		{hf, partition.TensorShard{Layer: 0, Name: "w_gate"}, []string{"w_gate"}},
		{&more, partition.TensorShard{Layer: 2, Name: "wo"}, []string{"layer 2 wo", "transformer.h.2.attn.c_proj.weight", "gpt2-tiny"}},
	} {
		s := New(w, c.cfg, plan.Shard(0))
		err := s.Prefetch(append(slices.Clone(list), c.add))
		if err == nil {
			t.Fatalf("%v: no error", c.add)
		}
		for _, want := range c.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %q does not name %q", c.add, err, want)
			}
		}
		if len(s.fetched) != 0 {
			t.Errorf("%v: %d tensors held after a failed Prefetch", c.add, len(s.fetched))
		}
	}
}
