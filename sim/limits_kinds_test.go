package sim

import (
	"errors"
	"testing"

	"github.com/partbench/partbench/partition"
)

// kindsConfig is a tiny model on PP 6 by an uneven layer map (1, 3, 3, 2,
// 2, 2 layers): four stage kinds (the first; the 3-layer middles; the
// 2-layer middles; the last), two micro-batches.
const kindsConfig = `version = 1
name = "kinds-tiny"
[model]
name = "tiny-dense"
layers = 13
hidden = 64
heads = 8
kv_heads = 4
head_dim = 8
ffn = 128
gated_mlp = true
vocab = 96
embeddings = true
lm_head = true
dtype = "fp32"
[workload]
batch = 4
context = 32
output_tokens = 4
[parallel]
tp = 2
pp = 6
microbatches = 2
layer_map = [0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 5]
[hardware]
preset = "h100-sxm"
[topology]
name = "local-1x12"
nodes = 1
gpus_per_node = 12
[topology.intra_node]
class = "nvlink"
name = "NVLink 4 via NVSwitch"
bytes_per_s = 450e9
latency_s = 1.0e-6
nvswitch = true
`

// checkOpsFromShape, counting once per stage kind, refuses at the stage
// where the running sum of the built Programs' ops (an independent count:
// len(Program.Ops) per stage, prefill + steps × decode) first passes
// MaxTimelineOps, with that sum, and passes a plan whose sum stays within.
// The decode steps are chosen so the sum crosses the bound at each stage in
// turn: in the middle of a kind's run too.
func TestOpsFromShapeByKind(t *testing.T) {
	plan := planOfText(t, kindsConfig, "kinds-tiny")
	pre := make([]int, plan.PP)
	dec := make([]int, plan.PP)
	for st := range pre {
		r := plan.RankOf(st, 0)
		pre[st], dec[st] = len(plan.Program(r, partition.Prefill).Ops), len(plan.Program(r, partition.Decode).Ops)
	}
	if dec[1] == dec[3] || dec[0] == dec[1] {
		t.Fatalf("decode ops per stage %v: the kinds do not differ as described", dec)
	}
	sum := func(steps, upTo int) int {
		n := 0
		for st := 0; st <= upTo; st++ {
			n += pre[st] + steps*dec[st]
		}
		return n
	}
	for at := 0; at < plan.PP; at++ {
		// The fewest steps whose sum up to stage at passes the bound.
		steps := 1
		for sum(steps, at) <= MaxTimelineOps {
			steps *= 2
		}
		lo := steps / 2
		for lo+1 < steps { // sum(lo) ≤ bound < sum(steps)
			mid := (lo + steps) / 2
			if sum(mid, at) > MaxTimelineOps {
				steps = mid
			} else {
				lo = mid
			}
		}
		first := 0 // the stage where the sum first passes, at or before at
		for sum(steps, first) <= MaxTimelineOps {
			first++
		}
		err := checkOpsFromShape(plan, Options{DecodeSteps: steps}, true)
		var tl *TooLargeError
		if !errors.As(err, &tl) {
			t.Errorf("%d steps: %v, want a TooLargeError", steps, err)
			continue
		}
		if want := sum(steps, first); tl.Ops != want {
			t.Errorf("%d steps: refused at %d ops, want %d (stage %d's running sum)", steps, tl.Ops, want, first)
		}
		if err := checkOpsFromShape(plan, Options{DecodeSteps: lo}, true); lo > 0 && sum(lo, plan.PP-1) <= MaxTimelineOps && err != nil {
			t.Errorf("%d steps (%d ops): %v, want none", lo, sum(lo, plan.PP-1), err)
		}
	}
	if err := checkOpsFromShape(plan, Options{DecodeSteps: 16}, true); err != nil {
		t.Errorf("16 steps (%d ops): %v", sum(16, plan.PP-1), err)
	}
}
