package partition

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/partbench/partbench/configs"
)

// A Planner's plans and errors are NewPlanStages's, field for field and
// word for word, over every tp × pp × dp layout of a GPU count (each with
// micro-batch counts that do and do not divide the batch, the even layer map
// and one with the first stage a layer lighter) and a few invalid ones. The
// configs: tp8pp2's model (16 layers, no embedding or LM head) on 64 GPUs
// under the seed's workload (batch 128, context 10,000), one whose KV cache
// leaves so little room that the prefill chunk is halved or nothing fits
// (batch 1,024), and the seed's with a fixed prefill chunk of 512;
// Llama-2-13B (untied embedding and LM head) prefilling 2,048 tokens on 64
// GPUs; GPT-2 XL (tied LM head, learned positions, 25 heads) decoding only,
// on 50 GPUs in nodes of 5. Each config's plans share one Planner, so every
// layout after the first is checked by ValidateLayout and priced from what
// earlier ones left, whatever their pipeline depth; their stage layer
// lists, shared between plans, must end at their capacity. As in a search,
// each depth's layer map is one slice given again and again; at the end a
// map the Planner has seen is changed in place, twice, and must be planned
// anew. Each config is planned twice: by a Planner making each plan and its
// StageMemory and by one reusing its Plan and list (ReusePlan,
// ReuseStageMemory), whose plans, read before the next is planned, must be
// the same, each the Planner's one Plan, their StageMemory the first PP
// entries of the Planner's list.
func TestPlannerPlansAreNewPlanStages(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reuse=%v", reuse), func(t *testing.T) { plannerPlansAreNewPlanStages(t, reuse) })
	}
}

func plannerPlansAreNewPlanStages(t *testing.T, reuse bool) {
	for _, tc := range []struct {
		name, config       string
		batch, chunk       int
		nodes, perNode     int
		wantHalved, wantNo bool
	}{
		{"seed", "tp8pp2", 128, 0, 8, 8, false, false},
		{"seed-batch1024", "tp8pp2", 1024, 0, 8, 8, true, true},
		{"seed-chunk512", "tp8pp2", 128, 512, 8, 8, false, false},
		{"llama2-13b", "llama2-13b-2k", 256, 0, 8, 8, false, false},
		{"gpt2-xl-decode", "gpt2-xl-decode", 128, 0, 10, 5, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := configs.Load(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			dgx, err := configs.Load("tp8pp2") // its links: the single-GPU configs have none
			if err != nil {
				t.Fatal(err)
			}
			base.Workload.Batch = tc.batch
			base.Topology = dgx.Topology
			base.Topology.Nodes, base.Topology.GPUsPerNode = tc.nodes, tc.perNode
			gpus, layers := tc.nodes*tc.perNode, base.Model.Layers
			pl := NewPlanner()
			pl.ReuseStageMemory, pl.ReusePlan = reuse, reuse
			var reused *Plan // the plan the reusing Planner gave first
			var plans, halved, nofit, invalid int
			try := func(par configs.Parallel) {
				t.Helper()
				c := *base
				c.Parallel = par
				c.Parallel.PrefillChunk = tc.chunk
				c.Name = fmt.Sprintf("tp%dpp%ddp%d-m%d-%v", par.TP, par.PP, par.DP, par.Microbatches, par.LayerMap)
				want, wantErr := NewPlanStages(&c)
				got, gotErr := pl.Stages(&c)
				if errText(gotErr) != errText(wantErr) {
					t.Fatalf("%s: Planner error %q, NewPlanStages %q", c.Name, errText(gotErr), errText(wantErr))
				}
				if wantErr == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: Planner plan differs from NewPlanStages:\n%+v\n%+v", c.Name, got, want)
				}
				if wantErr == nil && reuse {
					if shared := &pl.stageMem[0] == &got.StageMemory[0]; !shared || cap(got.StageMemory) != got.PP {
						t.Fatalf("%s: StageMemory in the Planner's list %v, capacity %d for %d stages", c.Name, shared, cap(got.StageMemory), got.PP)
					}
					if reused == nil {
						reused = got
					}
					if got != reused || got != pl.plan {
						t.Fatalf("%s: a reusing Planner's plan %p, its first %p, its own %p", c.Name, got, reused, pl.plan)
					}
				}
				if wantErr == nil {
					for s, l := range got.StageLayers { // shared between plans: an append must copy
						if cap(l) != len(l) {
							t.Fatalf("%s: stage %d's layer list has capacity %d beyond its %d layers", c.Name, s, cap(l), len(l))
						}
					}
				}
				var nf *NoFitError
				switch {
				case wantErr == nil:
					plans++
					if want.PrefillChunks > 1 {
						halved++
					}
				case errors.As(wantErr, &nf):
					if got := errNoFit(gotErr); !reflect.DeepEqual(nf, got) {
						t.Fatalf("%s: NoFitError %+v, want %+v", c.Name, got, nf)
					}
					nofit++
				default:
					invalid++
				}
			}
			try(configs.Parallel{TP: 3, PP: 1, DP: 1, Microbatches: 1, Schedule: "fill-drain"}) // invalid first: the next is validated fully
			firsts := map[int][]int{}                                                           // one layer map slice per depth, given again as a search does
			for tp := 1; tp <= gpus; tp++ {
				for pp := 1; tp*pp <= gpus; pp++ {
					if gpus%(tp*pp) != 0 || pp > layers {
						continue
					}
					dp := gpus / (tp * pp)
					for _, mb := range []int{1, 2, 8, 128, 3} {
						maps := [][]int{nil}
						if pp >= 2 && layers > pp {
							first, ok := firsts[pp]
							if !ok {
								first = make([]int, layers) // stage 0 one layer lighter than the even split's
								n0 := (layers+pp-1)/pp - 1
								for l := range first {
									if l >= n0 {
										first[l] = 1 + (l-n0)*(pp-1)/(layers-n0)
									}
								}
								if n0 < 1 {
									first = nil
								}
								firsts[pp] = first
							}
							if first != nil {
								maps = append(maps, first)
							}
						}
						for _, m := range maps {
							try(configs.Parallel{TP: tp, PP: pp, DP: dp, Microbatches: mb, LayerMap: m, Schedule: "fill-drain"})
						}
					}
				}
			}
			// A layer map the Planner has seen, changed in place: the last
			// stage one layer lighter, then a map that is not runs of
			// consecutive layers; each must be planned anew.
			for pp, m := range firsts {
				if m == nil || pp < 3 {
					continue
				}
				for l := range m {
					m[l] = min(l*pp/layers, pp-1)
				}
				if l := slices.Index(m, pp-1); l < layers-1 {
					m[l] = pp - 2
				}
				try(configs.Parallel{TP: 1, PP: pp, DP: gpus / pp, Microbatches: 1, LayerMap: m, Schedule: "fill-drain"})
				m[0], m[1] = 1, 0
				try(configs.Parallel{TP: 1, PP: pp, DP: gpus / pp, Microbatches: 1, LayerMap: m, Schedule: "fill-drain"})
				break
			}
			try(configs.Parallel{TP: 1, PP: 2, DP: gpus, Microbatches: 1, Schedule: "fill-drain"}) // twice the GPUs
			// Each outcome must occur, or the comparison proves less than it says.
			if plans == 0 || invalid < 3 || (tc.wantNo && nofit == 0) || (tc.wantHalved && halved == 0) {
				t.Fatalf("%d plans (%d with the prompt chunked), %d that do not fit, %d invalid: the layouts do not exercise every path", plans, halved, nofit, invalid)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func errNoFit(err error) *NoFitError {
	var nf *NoFitError
	errors.As(err, &nf)
	return nf
}
