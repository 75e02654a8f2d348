package partition

import (
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

// Rechunk is planning at another fixed chunk but for the memory: the seed's
// tp8pp2 and
// Llama-2-13B planned at one fixed chunk, rechunked to each of four others
// (the whole prompt, halves as the memory fit makes them, and a chunk that
// leaves a short last pass), must equal the plan NewPlanStages makes at
// that chunk in every field but StageMemory, and every rank's prefill and
// decode Program built from it must equal that plan's. A Rechunk that
// left PrefillChunks, or the config's chunk, as they were fails it.
func TestRechunkIsPlanningAtTheChunk(t *testing.T) {
	checked := 0
	for _, name := range []string{"tp8pp2", "llama2-13b-2k"} {
		base, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		prompt := base.Workload.PromptTokens()
		if prompt < 16 {
			t.Fatalf("%s: prompt of %d tokens: too short to rechunk", name, prompt)
		}
		// The first chunk planned, then the chunks it is rechunked to.
		chunks := []int{(prompt + 3) / 4, prompt, (prompt + 1) / 2, (prompt + 7) / 8, prompt/3 + 1}
		cfg := *base
		cfg.Parallel.PrefillChunk = chunks[0]
		p, err := NewPlanStages(&cfg)
		if err != nil {
			t.Fatalf("%s at chunk %d: %v", name, chunks[0], err)
		}
		for _, chunk := range chunks[1:] {
			if err := p.Rechunk(chunk); err != nil {
				t.Fatalf("%s: rechunk to %d: %v", name, chunk, err)
			}
			want := *base
			want.Parallel.PrefillChunk = chunk
			w, err := NewPlanStages(&want)
			if err != nil {
				t.Fatalf("%s at chunk %d: %v", name, chunk, err)
			}
			got := *p
			got.StageMemory = w.StageMemory // the one field Rechunk does not redo
			if !reflect.DeepEqual(&got, w) {
				t.Fatalf("%s rechunked to %d: %+v, planned at it %+v", name, chunk, &got, w)
			}
			for rank := 0; rank < p.Size(); rank += max(1, p.TP/2) {
				for _, phase := range []Phase{Prefill, Decode} {
					if g, x := p.Program(rank, phase), w.Program(rank, phase); !reflect.DeepEqual(g, x) {
						t.Fatalf("%s rechunked to %d, rank %d %s: %d ops, planned at it %d", name, chunk, rank, phase, len(g.Ops), len(x.Ops))
					}
					checked++
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("%d Programs compared: too few", checked)
	}
}

// A chunk outside [1, prompt] is refused with the field, the range and the
// value, and leaves the plan as it was.
func TestRechunkRefusesChunksOutOfRange(t *testing.T) {
	cfg, err := configs.Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlanStages(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prompt := cfg.Workload.PromptTokens()
	before := *p
	chunkBefore := p.Config.Parallel.PrefillChunk
	for _, bad := range []int{0, -3, prompt + 1} {
		err := p.Rechunk(bad)
		if err == nil {
			t.Fatalf("rechunk to %d: no error", bad)
		}
		for _, want := range []string{"parallel.prefill_chunk", "[1, prompt tokens = ", "(got "} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("rechunk to %d: %q does not say %q", bad, err, want)
			}
		}
		if !reflect.DeepEqual(*p, before) || p.Config.Parallel.PrefillChunk != chunkBefore {
			t.Fatalf("rechunk to %d changed the plan", bad)
		}
	}
}
