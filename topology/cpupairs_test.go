package topology

import "testing"

// PairedCPU: ranks 2c and 2c+1 on CPU c where the ranks are twice the
// CPUs and no tensor-parallel group straddles a CPU; -1 elsewhere.
func TestPairedCPU(t *testing.T) {
	for _, c := range []struct {
		lr, n, cpus, tp, first, want int
	}{
		{0, 4, 2, 2, 0, 0}, {1, 4, 2, 2, 0, 0}, {2, 4, 2, 2, 0, 1}, {3, 4, 2, 2, 0, 1}, // tp2-dp2, tp2pp2
		{3, 4, 2, 4, 0, 1},   // tp4: the group of 4 over both CPUs
		{2, 4, 2, 1, 0, 1},   // pp4: no groups
		{5, 8, 4, 4, 8, 2},   // the host's first rank 8 starts a group of 4
		{1, 4, 2, 4, 2, -1},  // first rank 2 is mid-group of 4
		{0, 6, 3, 3, 0, -1},  // groups of 3 would straddle a CPU
		{3, 16, 2, 1, 0, -1}, // 16 on 2: 8 to a CPU, not bound
		{0, 2, 2, 2, 0, -1},  // a CPU each: not this rule
		{0, 2, 1, 2, 0, -1},  // one CPU
		{4, 4, 2, 2, 0, -1},  // not a local rank
	} {
		if got := PairedCPU(c.lr, c.n, c.cpus, c.tp, c.first); got != c.want {
			t.Errorf("PairedCPU(lr %d, n %d, cpus %d, tp %d, first %d) = %d, want %d", c.lr, c.n, c.cpus, c.tp, c.first, got, c.want)
		}
	}
}
