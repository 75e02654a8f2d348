package sim

import (
	"testing"

	"github.com/partbench/partbench/partition"
)

// The slices takeOps hands out hold their own ops: each filled to its
// capacity (n, asked for) and then appended to once more — which must copy
// it out of the slab, not write into the next slice — keeps every op
// written to it, and so does every other slice. The sizes cross block
// boundaries (opBlock = 64: 30 + 30 fit in the first block, 10 does not
// fit the 4 left and starts a second) and include one longer than a block
// (100: a block of its own) and an empty one.
func TestTakeOpsSlicesAreTheirOwn(t *testing.T) {
	c := NewQuickCache(CollectiveOptions{})
	sizes := []int{30, 30, 10, 0, 100, 64, 1, 63}
	var got [][]partition.Op
	for i, n := range sizes {
		s := c.takeOps(n)
		if len(s) != 0 || cap(s) != n {
			t.Fatalf("takeOps(%d): len %d cap %d, want 0 and %d", n, len(s), cap(s), n)
		}
		for j := 0; j < n; j++ {
			s = append(s, partition.Op{Layer: i, Bytes: int64(j)})
		}
		got = append(got, s)
	}
	for i := range got {
		got[i] = append(got[i], partition.Op{Layer: -1, Bytes: -1}) // past its capacity
	}
	for i, s := range got {
		if len(s) != sizes[i]+1 {
			t.Fatalf("slice %d: %d ops, want %d", i, len(s), sizes[i]+1)
		}
		for j, op := range s[:sizes[i]] {
			if op.Layer != i || op.Bytes != int64(j) {
				t.Fatalf("slice %d op %d: layer %d bytes %d, want %d and %d (overwritten)", i, j, op.Layer, op.Bytes, i, j)
			}
		}
	}
}
