package partition

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
)

// Pass on a plan without its rank list (NewPlanStages, as dry runs and the
// search build them) is the pass NewPlan's plan builds, on every rank of a
// TP × PP × DP plan (test/tp2-dp2-tiny: 4 ranks) and a pipeline
// (test/pp4-tiny), for a prefill chunk and a sampled decode step. Before
// Pass described the rank with RankAt it indexed Plan.Ranks and panicked
// on such a plan.
func TestPassWithoutRankList(t *testing.T) {
	for _, name := range []string{"test/tp2-dp2-tiny", "test/pp4-tiny"} {
		cfg, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		full, err := NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		stages, err := NewPlanStages(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if stages.Ranks != nil {
			t.Fatalf("%s: NewPlanStages kept a rank list", name)
		}
		for rank := 0; rank < full.Size(); rank++ {
			for _, c := range []struct {
				phase         Phase
				seqs, q, past int
				sample        bool
			}{{Prefill, 2, 7, 0, false}, {Prefill, 1, 5, 9, true}, {Decode, 3, 1, 20, true}} {
				want := full.Pass(rank, c.phase, 0, c.seqs, c.q, c.past, c.sample)
				got := stages.Pass(rank, c.phase, 0, c.seqs, c.q, c.past, c.sample)
				if len(want) == 0 {
					t.Fatalf("%s rank %d %v: no ops", name, rank, c)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s rank %d %v: the plan without its rank list builds another pass", name, rank, c)
				}
			}
		}
	}
}
