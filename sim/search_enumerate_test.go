package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

// enumerateByLoop is Enumerate as it was written before it walked the
// divisors and sized its list: tp and pp over every integer, candidates
// appended one by one. TestEnumerateIsEnumerateByLoop holds the two equal.
func enumerateByLoop(sp *SearchSpec) ([]Candidate, []Factorization) {
	m := sp.Config.Model
	gpus := sp.System.Topology.Size()
	maxM := sp.MaxMicrobatches
	if maxM == 0 {
		maxM = DefaultMaxMicrobatches
	}
	var cands []Candidate
	var facts []Factorization
	for tp := 1; tp <= gpus; tp++ {
		if gpus%tp != 0 {
			continue
		}
		for pp := 1; pp <= gpus/tp; pp++ {
			if (gpus/tp)%pp != 0 {
				continue
			}
			f := Factorization{TP: tp, PP: pp, DP: gpus / (tp * pp)}
			var why []string
			for _, d := range m.TPIndivisible(tp) {
				why = append(why, fmt.Sprintf("tp %d does not divide %s", tp, d))
			}
			if f.PP > m.Layers {
				why = append(why, fmt.Sprintf("pp %d exceeds layers %d", f.PP, m.Layers))
			}
			if per := sp.System.Topology.GPUsPerNode; !configs.ReplicasAlign(tp*pp, f.DP, per) {
				why = append(why, fmt.Sprintf("replicas of tp × pp = %d GPUs straddle nodes of %d", tp*pp, per))
			}
			f.Excluded = strings.Join(why, "; ")
			facts = append(facts, f)
			if f.Excluded != "" {
				continue
			}
			variants := LayerVariants(m.Layers, f.PP, m.Embeddings || m.LMHead)
			for mb := 1; mb <= maxM; mb++ {
				if sp.Config.Workload.Batch%mb != 0 {
					continue
				}
				for _, v := range variants {
					v.TP, v.PP, v.DP, v.Microbatches = tp, f.PP, f.DP, mb
					cands = append(cands, v)
				}
			}
		}
	}
	return cands, facts
}

// Enumerate lists the same candidates and factorizations, in the same
// order and with the same nil-ness, as the loop over every integer: over
// GPU counts with many and few divisors (a prime, a square, powers of two
// up to 32,768), nodes of 8, 6 and 1 GPUs (replicas that straddle), models
// whose heads TP does not always divide, fewer layers than GPUs, batches
// with no divisor up to the micro-batch bound but 1, and micro-batch
// bounds of 1, 3 and the default.
func TestEnumerateIsEnumerateByLoop(t *testing.T) {
	n := 0
	for _, gpus := range []int{8, 16, 24, 48, 64, 72, 96, 1000, 4096, 16384, 32768} {
		for _, per := range []int{8, 6, 1} {
			if gpus%per != 0 {
				continue
			}
			for _, c := range []struct {
				layers, heads, batch, maxM int
			}{{128, 128, 4096, 0}, {7, 12, 12, 3}, {30, 40, 13, 1}, {1, 1, 1, 0}} {
				spec := syntheticSpec(t, 8)
				spec.System.Topology.Nodes, spec.System.Topology.GPUsPerNode = gpus/per, per
				m := &spec.Config.Model
				m.Layers, m.Heads, m.KVHeads = c.layers, c.heads, c.heads
				spec.Config.Workload.Batch, spec.MaxMicrobatches = c.batch, c.maxM
				gotC, gotF := spec.Enumerate()
				wantC, wantF := enumerateByLoop(&spec)
				if !reflect.DeepEqual(gotC, wantC) || (gotC == nil) != (wantC == nil) {
					t.Fatalf("%d GPUs (%d a node), %+v: %d candidates, the loop over every integer %d", gpus, per, c, len(gotC), len(wantC))
				}
				if !reflect.DeepEqual(gotF, wantF) || (gotF == nil) != (wantF == nil) {
					t.Fatalf("%d GPUs (%d a node), %+v: factorizations %v, the loop over every integer %v", gpus, per, c, gotF, wantF)
				}
				n += len(gotC)
			}
		}
	}
	if n == 0 {
		t.Fatal("no candidate enumerated")
	}
}

// divisors against trial division of every integer up to n.
func TestDivisors(t *testing.T) {
	for n := -2; n <= 1100; n++ {
		var want []int
		for d := 1; d <= n; d++ {
			if n%d == 0 {
				want = append(want, d)
			}
		}
		if got := divisors(n); !reflect.DeepEqual(got, want) {
			t.Fatalf("divisors(%d) = %v, want %v", n, got, want)
		}
	}
}
