package sim

import (
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// markFirstTouch marks as first exactly the ops whose (layer, tensor) no
// earlier op of the rank's run order touched, as a map of the keys seen
// says op by op (the independent reference), on chunked prefills of 10
// (tp8pp2, chunks of 1,000 tokens) and 480 chunks (the synthetic pipeline
// with uneven layers), unchunked tp8pp2 and GPT-2 tiny's learned positions,
// with 0, 1 and 3 decode steps, on the first rank and the last stage's
// first. It fails when the comparison with the op one pass before checks
// the layer alone (tried).
func TestMarkFirstTouchIsFirstSeen(t *testing.T) {
	var plans []*partition.Plan
	for _, e := range []struct {
		name  string
		chunk int
	}{{"tp8pp2", 1000}, {"tp8pp2", 0}, {"test/gpt2-tiny", 5}} {
		plans = append(plans, planEdited(t, e.name, func(c *configs.Config) { c.Parallel.PrefillChunk = e.chunk }))
	}
	plans = append(plans, syntheticChunked(t, 8, 4, []int{0, 1, 2, 2, 2, 3, 3, 3}))
	for _, p := range plans {
		for _, r := range []int{0, p.RankOf(p.PP-1, 0)} {
			pre := prefillProgram(p, r).Ops
			dec := p.Program(r, partition.Decode).Ops
			for _, steps := range []int{0, 1, 3} {
				st := &rankState{pre: pre, dec: dec, steps: steps}
				markFirstTouch(st, nil, r)
				n := len(pre) + min(steps, 1)*len(dec)
				if len(st.first) != n {
					t.Fatalf("%s rank %d, %d steps: %d marks, want %d", p.Config.Name, r, steps, len(st.first), n)
				}
				seen := map[tensorKey]bool{}
				firsts := 0
				for pc := range n {
					op := st.at(pc).op
					k := tensorKey{op.Layer, op.Tensor}
					if want := !seen[k]; st.first[pc] != want {
						t.Fatalf("%s rank %d, %d steps: op %d (%s, layer %d, %q) first %v, want %v", p.Config.Name, r, steps, pc, op.Name, op.Layer, op.Tensor, st.first[pc], want)
					}
					seen[k] = true
					if st.first[pc] {
						firsts++
					}
				}
				if firsts == 0 {
					t.Fatalf("%s rank %d: no first touch", p.Config.Name, r)
				}
			}
		}
	}
}
