package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// refusalsBefore is how Collective worded the algorithms that do not run
// before it kept only a code (group.refusal) until an error needs words:
// every allowed algorithm's cannot, or, when it can, the protocol message
// if no protocol the options allow gives a model.
func refusalsBefore(cg *collectiveGroup, opt CollectiveOptions) []string {
	var refused []string
	for _, a := range ncclAlgos {
		if !cg.algos[a] {
			continue
		}
		if why := cg.g.cannot(cg.op, a); why != "" {
			refused = append(refused, string(a)+": "+why)
			continue
		}
		ran := false
		for _, p := range Protocols {
			if !cg.protos[p] {
				continue
			}
			if _, ok := cg.g.model(cg.op, a, p, 1<<20); ok {
				ran = true
			}
		}
		if !ran {
			refused = append(refused, fmt.Sprintf("%s: runs only with %s, excluded by the protocol setting %q", a, strings.Join(protocolsOf(a), ","), opt.Proto))
		}
	}
	return refused
}

// Collective decides whether an algorithm runs from group.refusal's code
// and words the refusals (collectiveGroup.refusals) only for an error. On
// every collective op, on groups of 1, 2, 3 and 8 GPUs of an NVSwitch node
// and of a PCIe node, 16 over two nodes, 5 split 3 + 2 and 2 split one per
// node, under options that leave every algorithm, one, or protocols some
// algorithms cannot use: the code must be canRun exactly when cannot says
// nothing, the words must be those written for every algorithm before, and
// an error must end with them.
func TestCollectiveRefusalsAreCannot(t *testing.T) {
	groups := [][]int{{0}, {0, 1}, {0, 1, 2}, firstRanks(8), firstRanks(16), {5, 6, 7, 8, 9}, {0, 8}}
	opts := []CollectiveOptions{{}, {Algo: "nvls"}, {Algo: "tree"}, {Algo: "ring,nvls"}, {Proto: "LL"}, {Algo: "nvls", Proto: "LL"}, {Algo: "^ring"}}
	ops := []commcount.Op{commcount.AllReduce, commcount.AllGather, commcount.ReduceScatter, commcount.Broadcast, commcount.Reduce}
	worded, errs := 0, 0
	for _, sys := range []topology.System{dgxH100(2), pcieBox(2)} {
		for _, ranks := range groups {
			for _, op := range ops {
				for _, opt := range opts {
					cg, err := newCollectiveGroup(sys.Topology, op, ranks, opt)
					if err != nil {
						continue // the options enable nothing for op
					}
					for _, a := range ncclAlgos {
						if (cg.g.refusal(op, a) == canRun) != (cg.g.cannot(op, a) == "") {
							t.Fatalf("%s, %s on %v, %s: refusal %d, cannot %q", sys.Topology.Name, op, ranks, a, cg.g.refusal(op, a), cg.g.cannot(op, a))
						}
					}
					got, want := cg.refusals(opt), refusalsBefore(cg, opt)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s, %s on %v, %+v: refusals %q, before %q", sys.Topology.Name, op, ranks, opt, got, want)
					}
					if len(got) > 0 {
						worded++
					}
					if _, err := Collective(sys, op, ranks, 1<<20, opt); err != nil {
						if !strings.HasSuffix(err.Error(), ": "+strings.Join(want, "; ")) {
							t.Fatalf("%s, %s on %v, %+v: error %q does not end with the refusals %q", sys.Topology.Name, op, ranks, opt, err, want)
						}
						errs++
					}
				}
			}
		}
	}
	if worded < 50 || errs < 10 {
		t.Fatalf("%d cases with refusals, %d errors: too few to test", worded, errs)
	}
}
