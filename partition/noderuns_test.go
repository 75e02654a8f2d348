package partition

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
)

// NodeRuns cuts [0, n) into consecutive runs, in order, over each of which
// both a+t and b+t stay on one node, and ends a run only where one of them
// starts a node: checked against the node numbers themselves for every
// a, b < 24, n ≤ 13 and node size 1–9.
func TestNodeRunsKeepBothRanksOnOneNode(t *testing.T) {
	for g := 1; g <= 9; g++ {
		for a := 0; a < 24; a++ {
			for b := 0; b < 24; b++ {
				for n := 0; n <= 13; n++ {
					next := 0
					NodeRuns(a, b, n, g, func(t0, t1 int) {
						if t0 != next || t1 <= t0 || t1 > n {
							t.Fatalf("g %d a %d b %d n %d: run [%d, %d) after %d", g, a, b, n, t0, t1, next)
						}
						for u := t0; u < t1; u++ {
							if (a+u)/g != (a+t0)/g || (b+u)/g != (b+t0)/g {
								t.Fatalf("g %d a %d b %d: run [%d, %d) crosses a node at %d", g, a, b, t0, t1, u)
							}
						}
						if t1 < n && (a+t1)%g != 0 && (b+t1)%g != 0 {
							t.Fatalf("g %d a %d b %d n %d: run [%d, %d) ends inside both nodes", g, a, b, n, t0, t1)
						}
						next = t1
					})
					if next != n {
						t.Fatalf("g %d a %d b %d n %d: runs end at %d", g, a, b, n, next)
					}
				}
			}
		}
	}
}

// Comm, which looks links up once per run of TP indices within a node, is
// commByRank on layouts whose TP groups and stage pairs cross nodes in
// different places: TP 8 on nodes of 4 (every group on two nodes) and of 6
// (groups cut at 6 and 4), TP 4 × PP 5 on nodes of 10 (stage 2 cut, the
// ring's last hop across), TP 2 × PP 6 on nodes of 4 (stage pairs within and
// across nodes), TP 4 × PP 4 on nodes of 8.
func TestCommByRunsEqualsCountsOfEveryRank(t *testing.T) {
	for _, l := range []struct{ tp, pp, gpn int }{{8, 2, 4}, {8, 3, 6}, {4, 5, 10}, {2, 6, 4}, {4, 4, 8}} {
		c, err := configs.Load("tp8pp2")
		if err != nil {
			t.Fatal(err)
		}
		c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches = l.tp, l.pp, 2
		c.Topology.GPUsPerNode = l.gpn
		c.Topology.Nodes = (l.tp*l.pp + l.gpn - 1) / l.gpn
		p, err := NewPlan(c)
		if err != nil {
			t.Fatalf("tp %d pp %d on nodes of %d: %v", l.tp, l.pp, l.gpn, err)
		}
		for _, phase := range []Phase{Prefill, Decode} {
			got, want := p.Comm(phase), commByRank(p, phase)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("tp %d pp %d on nodes of %d, %s: Comm\n%+v\nrank by rank\n%+v", l.tp, l.pp, l.gpn, phase, got, want)
			}
			if len(got.BytesByLink) < 2 {
				t.Errorf("tp %d pp %d on nodes of %d, %s: bytes on %d link classes, want the network and NVLink", l.tp, l.pp, l.gpn, phase, len(got.BytesByLink))
			}
		}
	}
}
