package partition

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
)

// A Planner's plans and errors are NewPlanStages's, field for field and
// word for word, over every layout a search of tp8pp2's model could ask
// for on 64 GPUs (8 nodes of 8) and a set of invalid ones, under three
// workloads: the seed's (batch 128, context 10,000), one whose KV cache
// leaves so little room that the prefill chunk is halved or nothing fits
// (batch 1,024), and the seed's with a fixed prefill chunk of
// 512. The plans share one Planner per workload, so every layout after the
// first is checked by ValidateLayout and priced from what earlier ones left.
func TestPlannerPlansAreNewPlanStages(t *testing.T) {
	for _, wl := range []struct {
		name  string
		batch int
		chunk int
	}{{"seed", 128, 0}, {"batch1024", 1024, 0}, {"chunk512", 128, 512}} {
		t.Run(wl.name, func(t *testing.T) {
			base, err := configs.Load("tp8pp2")
			if err != nil {
				t.Fatal(err)
			}
			base.Workload.Batch = wl.batch
			base.Topology.Nodes = 8
			layers := base.Model.Layers // 16
			pl := NewPlanner()
			var plans, halved, nofit, invalid int
			try := func(par configs.Parallel) {
				t.Helper()
				c := *base
				c.Parallel = par
				c.Parallel.PrefillChunk = wl.chunk
				c.Name = fmt.Sprintf("tp%dpp%ddp%d-m%d-%v", par.TP, par.PP, par.DP, par.Microbatches, par.LayerMap)
				want, wantErr := NewPlanStages(&c)
				got, gotErr := pl.Stages(&c)
				if errText(gotErr) != errText(wantErr) {
					t.Fatalf("%s: Planner error %q, NewPlanStages %q", c.Name, errText(gotErr), errText(wantErr))
				}
				if wantErr == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: Planner plan differs from NewPlanStages:\n%+v\n%+v", c.Name, got, want)
				}
				var nf *NoFitError
				switch {
				case wantErr == nil:
					plans++
					if want.PrefillChunks > 1 {
						halved++
					}
				case errorsAs(wantErr, &nf):
					if !reflect.DeepEqual(nf, errNoFit(gotErr)) {
						t.Fatalf("%s: NoFitError %+v, want %+v", c.Name, errNoFit(gotErr), nf)
					}
					nofit++
				default:
					invalid++
				}
			}
			try(configs.Parallel{TP: 3, PP: 1, DP: 1, Microbatches: 1, Schedule: "fill-drain"}) // invalid first: the next is validated fully
			for tp := 1; tp <= 64; tp *= 2 {
				for pp := 1; tp*pp <= 64; pp *= 2 {
					if pp > layers {
						continue
					}
					dp := 64 / (tp * pp)
					for _, mb := range []int{1, 2, 8, 128, 3} {
						var maps [][]int
						maps = append(maps, nil)
						if pp >= 2 {
							first := make([]int, layers) // stage 0 one layer lighter
							for l := range first {
								first[l] = min(pp-1, (l+1)*pp/layers)
							}
							if first[0] == 0 && first[layers-1] == pp-1 {
								maps = append(maps, first)
							}
						}
						for _, m := range maps {
							try(configs.Parallel{TP: tp, PP: pp, DP: dp, Microbatches: mb, LayerMap: m, Schedule: "fill-drain"})
						}
					}
				}
			}
			try(configs.Parallel{TP: 8, PP: 2, DP: 5, Microbatches: 1, Schedule: "fill-drain"}) // 80 GPUs on 64
			// Each outcome must occur, or the comparison proves less than it says.
			if plans == 0 || invalid < 3 || (wl.chunk == 0 && wl.batch > 128 && (nofit == 0 || halved == 0)) {
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

func errorsAs(err error, target **NoFitError) bool { return errors.As(err, target) }

func errNoFit(err error) *NoFitError {
	var nf *NoFitError
	errors.As(err, &nf)
	return nf
}
