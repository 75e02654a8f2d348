package partition

import (
	"testing"

	"github.com/partbench/partbench/commcount"
)

// ringWireSums' closed form is commcount's ring, step by step: for rings
// of 1 to 9 members and 72 or 100, payloads that do and do not split
// evenly (fewer elements than members included), both kinds, every
// position's wire bytes equal RingAllReduceWire's and RingAllGatherWire's
// sum over the ring's steps.
func TestRingWireSumsAreRingWire(t *testing.T) {
	checked := 0
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 72, 100} {
		for _, elems := range []int{0, 1, n - 1, n, n + 1, 3*n + 2, 4096, 12289} {
			if elems < 0 {
				continue
			}
			for _, elem := range []int{1, 2, 4} {
				for _, kind := range []Kind{AllReduce, AllGather} {
					k := ringKey{kind: kind, n: n, elems: elems, elem: elem}
					got := ringWireSums(k)
					var sum int64
					for pos := 0; pos < n; pos++ {
						var w int64
						if kind == AllReduce {
							_, w = commcount.RingAllReduceWire(n, pos, elems, elem)
						} else {
							_, w = commcount.RingAllGatherWire(n, elems/n, elem)
						}
						if d := got[pos+1] - got[pos]; d != w {
							t.Fatalf("%v n %d, %d elements of %d bytes, position %d: %d wire bytes, the ring step by step %d", kind, n, elems, elem, pos, d, w)
						}
						sum += w
						checked++
					}
					if got[0] != 0 || got[n] != sum {
						t.Fatalf("%v n %d, %d elements: sums %d … %d, want 0 … %d", kind, n, elems, got[0], got[n], sum)
					}
				}
			}
		}
	}
	// Ten rings × 8 payloads × 3 element sizes × 2 kinds, each position.
	if checked < 3000 {
		t.Errorf("only %d positions checked", checked)
	}
}
