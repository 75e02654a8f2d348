package sim

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/partition"
)

// Quick builds a layout's decode step once per (tp, micro-batch size,
// proxy depth) and shares it between the layouts that differ in prefill
// chunk alone (decodeOps). Here, for every layout the 4,096-GPU search
// priced, each stage kind's decode step shared by the cache must equal,
// op for op, the decode Program of that layout's own proxy plan, built
// fresh (but for its layer, names and peers in the middle and last stages,
// which take the first stage's layer); and the search must have priced layouts that share one (or the
// test checks nothing it was written for).
func TestQuickDecodeStepSharedAcrossChunks(t *testing.T) {
	spec := syntheticSpec(t, 4096)
	c, plans := pricedLayouts(t, spec)
	shared := map[proxyKey]int{} // layouts per decode key
	for pk, plan := range plans {
		pp, err := proxyPlan(plan, pk)
		if err != nil {
			t.Fatal(err)
		}
		kinds := c.passes[pk]
		for s := 0; s < pk.pp; s++ {
			r := pp.RankOf(s, 0)
			dec := pp.Program(r, partition.Decode)
			want := splitPass(dec.Ops)
			k := kinds[kindOf(s, pk.pp)]
			if err := aroundAsBuilt(k.decode, want); err != nil {
				t.Fatalf("layout %+v, stage kind %d: shared decode step's terms: %v", pk, kindOf(s, pk.pp), err)
			}
			ops := k.decode // the step's ops, without the terms stage prices them from
			ops.preT, ops.postT, ops.sendBytes = nil, nil, 0
			if kind := kindOf(s, pk.pp); kind == kindMiddle || kind == kindLast { // with the first stage's layer (TestQuickProxyStagesAreBuiltStages)
				if err := samePassUpToPlace(ops, want); err != nil {
					t.Fatalf("layout %+v, stage kind %d: shared decode step differs from the layout's own: %v", pk, kind, err)
				}
			} else if !reflect.DeepEqual(ops, want) {
				t.Fatalf("layout %+v, stage kind %d: shared decode step differs from the layout's own", pk, kindOf(s, pk.pp))
			}
			if ws := workingSet(partition.Program{Ops: want.layer}); k.layerWS != ws || k.extraWS != workingSet(dec)-ws {
				t.Fatalf("layout %+v: working sets %d + %d, want %d + %d", pk, k.layerWS, k.extraWS, ws, workingSet(dec)-ws)
			}
		}
		shared[proxyKey{tp: pk.tp, mbs: pk.mbs, pp: pk.pp}]++
	}
	most := 0
	for _, n := range shared {
		most = max(most, n)
	}
	if most < 2 {
		t.Fatalf("no two of the %d layouts share a decode step", len(plans))
	}
	t.Logf("%d layouts, %d decode steps built", len(plans), len(shared))
}
