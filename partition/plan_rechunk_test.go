package partition

import (
	"errors"
	"fmt"
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

// Planner.Layout is Stages without the memory fit: for the seed's tp8pp2
// and Llama-2-13B, each at TP 1–8 × PP 1–4 (every split the model and the
// two nodes allow) with a fixed chunk of a quarter, a third and one, and all
// of the prompt, through one Planner that reuses its Plan and one that does not,
// the plan must equal Stages's of the same config (a Planner of its own)
// in every field but StageMemory, which must be PP zero Memories, and so
// must every rank's prefill and decode Programs of the first and the last
// stage; Stages's error where it refuses for anything but memory must be
// Layout's. A config without a fixed chunk is refused, naming the field.
func TestLayoutIsStagesWithoutTheMemoryFit(t *testing.T) {
	compared, nofit := 0, 0
	for _, name := range []string{"tp8pp2", "llama2-13b-2k"} {
		base, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "llama2-13b-2k" {
			dgx, err := configs.Load("tp8pp2") // two nodes of 8
			if err != nil {
				t.Fatal(err)
			}
			base.Topology = dgx.Topology
		}
		prompt := base.Workload.PromptTokens()
		for _, reuse := range []bool{false, true} {
			pl, ref := NewPlanner(), NewPlanner()
			pl.ReusePlan, pl.ReuseStageMemory = reuse, reuse
			for _, chunk := range []int{(prompt + 3) / 4, prompt/3 + 1, prompt} {
				for tp := 1; tp <= 8; tp *= 2 {
					for pp := 1; pp <= 4; pp++ {
						cfg := *base
						cfg.Name = fmt.Sprintf("%s-tp%dpp%d-c%d", name, tp, pp, chunk)
						dp := base.Topology.Topology.Size() / (tp * pp)
						cfg.Parallel = configs.Parallel{TP: tp, PP: pp, DP: dp, Microbatches: 1, Schedule: "fill-drain", PrefillChunk: chunk}
						if dp*tp*pp != base.Topology.Topology.Size() {
							continue
						}
						got, gerr := pl.Layout(&cfg)
						want, werr := ref.Stages(&cfg)
						var nf *NoFitError
						if errors.As(werr, &nf) {
							nofit++ // Layout plans it all the same
							want, werr = nil, nil
						}
						if werr != nil || gerr != nil {
							if fmt.Sprint(gerr) != fmt.Sprint(werr) {
								t.Fatalf("%s: Layout's error %v, Stages's %v", cfg.Name, gerr, werr)
							}
							continue
						}
						if len(got.StageMemory) != pp {
							t.Fatalf("%s: %d stage memories, want %d", cfg.Name, len(got.StageMemory), pp)
						}
						for s, m := range got.StageMemory {
							if m != (Memory{}) {
								t.Fatalf("%s stage %d: memory %+v, want none", cfg.Name, s, m)
							}
						}
						if want == nil {
							continue
						}
						g := *got
						g.StageMemory = want.StageMemory
						if !reflect.DeepEqual(&g, want) {
							t.Fatalf("%s: Layout %+v, Stages %+v", cfg.Name, &g, want)
						}
						for _, st := range []int{0, pp - 1} {
							r := want.RankOf(st, 0)
							for _, phase := range []Phase{Prefill, Decode} {
								if a, b := got.Program(r, phase), want.Program(r, phase); !reflect.DeepEqual(a.Ops, b.Ops) {
									t.Fatalf("%s rank %d %s: Layout's Program differs from Stages's", cfg.Name, r, phase)
								}
							}
						}
						compared++
					}
				}
			}
		}
		cfg := *base
		cfg.Parallel.PrefillChunk = 0
		if _, err := NewPlanner().Layout(&cfg); err == nil || !strings.Contains(err.Error(), "parallel.prefill_chunk must be fixed (> 0)") || !strings.Contains(err.Error(), "(got 0)") {
			t.Fatalf("%s without a fixed chunk: %v", name, err)
		}
	}
	if compared < 20 {
		t.Fatalf("%d plans compared (%d that do not fit): too few to test", compared, nofit)
	}
}
