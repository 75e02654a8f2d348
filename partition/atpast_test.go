package partition

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
)

// Every pass of a chunked prefill but the last is the first pass with its
// attention ops moved to the chunk's past (Op.AtPast) and its chunk index
// changed: what lets an estimator price a chunked prefill from two passes.
// Checked against Program on every rank of layouts with many chunks, GQA
// (8 KV heads), GPT-2's biases and learned positions, and an
// encoder (bidirectional attention, prefill only).
func TestPrefillChunksDifferOnlyInAttentionPast(t *testing.T) {
	edit := func(name string, f func(*configs.Config)) *Plan {
		t.Helper()
		c, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		f(c)
		p, err := NewPlan(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return p
	}
	plans := []*Plan{
		edit("tp8pp2", func(c *configs.Config) { c.Parallel.PrefillChunk = 1000 }), // 10 chunks, the last shorter
		edit("tp8pp2", func(c *configs.Config) {
			c.Model.KVHeads = 8 // GQA: one KV head per TP rank
			c.Parallel.PrefillChunk = 3000
		}),
		edit("test/gpt2-tiny", func(c *configs.Config) { c.Parallel.PrefillChunk = 5 }),
		edit("test/gpt2-tiny", func(c *configs.Config) {
			c.Model.Encoder = true
			c.Workload.Phases = []string{"prefill"}
			c.Parallel.PrefillChunk = 6
		}),
	}
	for _, p := range plans {
		if p.PrefillChunks < 3 {
			t.Fatalf("%s: %d prefill chunks, the test needs ≥ 3", p.Config.Name, p.PrefillChunks)
		}
		for r := range p.Ranks {
			prog := p.Program(r, Prefill).Ops
			first := p.PrefillPass(r, 0, 0)
			attn := 0
			at := 0 // where the pass (c, mb) starts in prog
			for c := 0; c < p.PrefillChunks; c++ {
				for mb := 0; mb < p.Microbatches; mb++ {
					pass := p.PrefillPass(r, mb, c)
					if !reflect.DeepEqual(pass, prog[at:at+len(pass)]) {
						t.Fatalf("%s rank %d: PrefillPass(%d, %d) is not Program's pass", p.Config.Name, r, mb, c)
					}
					got := prog[at : at+len(pass)]
					at += len(pass)
					if c == 0 || c == p.PrefillChunks-1 {
						continue
					}
					if len(got) != len(first) {
						t.Fatalf("%s rank %d chunk %d: %d ops, the first pass %d", p.Config.Name, r, c, len(got), len(first))
					}
					for i := range first {
						want := first[i]
						want.Microbatch, want.Chunk = mb, c
						if want.Kind == Attention {
							want = want.AtPast(c * p.PrefillChunk)
							attn++
						}
						if !reflect.DeepEqual(got[i], want) {
							t.Fatalf("%s rank %d chunk %d mb %d op %d:\n got %+v\nwant %+v", p.Config.Name, r, c, mb, i, got[i], want)
						}
					}
				}
			}
			if at != len(prog) {
				t.Fatalf("%s rank %d: the passes cover %d of %d ops", p.Config.Name, r, at, len(prog))
			}
			if attn == 0 {
				t.Fatalf("%s rank %d: no attention op compared", p.Config.Name, r)
			}
		}
	}
}

// SetPast moves one op in place to each past in turn, forwards, backwards
// and back to where it started, and gives at every step AtPast's op from
// the original, field for field: on every attention op of tp8pp2's first
// prefill pass on its last rank (causal, after 0 cached tokens) and of
// an encoder (bidirectional: every query sees the whole pass).
func TestSetPastIsAtPast(t *testing.T) {
	enc, err := configs.Load("test/gpt2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	enc.Model.Encoder = true
	enc.Workload.Phases = []string{"prefill"}
	enc.Parallel.PrefillChunk = 6
	pe, err := NewPlan(enc)
	if err != nil {
		t.Fatal(err)
	}
	var checked, bidi int
	for _, p := range []*Plan{plan(t, "tp8pp2"), pe} {
		for _, orig := range p.PrefillPass(p.Size()-1, 0, 0) {
			if orig.Kind != Attention {
				continue
			}
			op := orig
			for _, past := range []int{1, 7, 1000, 3, 0, 8191, 0} {
				op.SetPast(past)
				if want := orig.AtPast(past); !reflect.DeepEqual(op, want) {
					t.Fatalf("%s: SetPast(%d) after others:\n got %+v\nwant %+v", p.Config.Name, past, op, want)
				}
			}
			if !reflect.DeepEqual(op, orig) { // the first pass's past is 0
				t.Fatalf("%s: SetPast(0) is not the first pass's op:\n got %+v\nwant %+v", p.Config.Name, op, orig)
			}
			checked++
			if op.Bidirectional {
				bidi++
			}
		}
	}
	if checked == 0 || bidi == 0 {
		t.Fatalf("%d attention ops checked, %d bidirectional: the test needs both kinds", checked, bidi)
	}
}
