package configs

import (
	"strings"
	"testing"
)

func TestDPDefaultsToOne(t *testing.T) {
	c, err := Parse(strings.NewReader(base), "inline")
	if err != nil {
		t.Fatal(err)
	}
	if c.Parallel.DP != 1 {
		t.Fatalf("parallel.dp absent: got %d, want 1", c.Parallel.DP)
	}
}

func TestDPReplicasOfAGroup(t *testing.T) {
	// base is tp 8 × pp 2 on dgx-h100x2 (2 nodes × 8 GPUs = 16). tp 8 × pp 1
	// × dp 2 = 16 GPUs: two replicas, one per node.
	c, err := Parse(strings.NewReader(strings.Replace(base, "pp = 2", "pp = 1\ndp = 2", 1)), "inline")
	if err != nil {
		t.Fatal(err)
	}
	if c.Parallel.TP != 8 || c.Parallel.PP != 1 || c.Parallel.DP != 2 {
		t.Fatalf("parallel = %+v, want tp 8, pp 1, dp 2", c.Parallel)
	}
}

func TestDPErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"negative", "pp = 2", "pp = 2\ndp = -1", "parallel.dp: must be in [1, 100000] (got -1)"},
		// 8 × 2 × 2 = 32 GPUs on a 16-GPU topology.
		{"gpus mismatch", "pp = 2", "pp = 2\ndp = 2", "parallel: tp × pp × dp = 8 × 2 × 2 = 32 GPUs, but topology \"dgx-h100x2\" has 16"},
		// 3 nodes × 8 = 24 GPUs = tp 4 × pp 3 × dp 2; a replica of 12 GPUs
		// neither divides a node of 8 nor fills whole nodes: replica 0 holds
		// node 0 and half of node 1, replica 1 the other half and node 2.
		{"replicas straddle nodes", "preset = \"dgx-h100x2\"", "preset = \"dgx-h100x2\"\nnodes = 3",
			"parallel.dp: with dp = 2 a replica of tp × pp = 12 GPUs must fill whole nodes or divide a node's 8 GPUs"},
	} {
		in := strings.Replace(base, tc.from, tc.to, 1)
		if tc.name == "replicas straddle nodes" {
			in = strings.Replace(strings.Replace(in, "tp = 8", "tp = 4", 1), "pp = 2", "pp = 3\ndp = 2", 1)
		}
		_, err := Parse(strings.NewReader(in), "inline")
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not contain %q", tc.name, err, tc.want)
		}
	}
}

func TestReplicasAlign(t *testing.T) {
	for _, tc := range []struct {
		size, dp, perNode int
		want              bool
	}{
		{12, 1, 8, true},  // one replica: nothing to align
		{4, 2, 8, true},   // two replicas in one node
		{16, 4, 8, true},  // each replica two whole nodes
		{12, 2, 8, false}, // 12 straddles: node 1 is half of each
		{3, 4, 4, false},  // replica 1 = ranks 3..5 crosses node 0 → 1
	} {
		if got := ReplicasAlign(tc.size, tc.dp, tc.perNode); got != tc.want {
			t.Errorf("ReplicasAlign(%d, %d, %d) = %v, want %v", tc.size, tc.dp, tc.perNode, got, tc.want)
		}
	}
}

// Ranks is tp × pp × dp, a missing dp counting 1: 8 × 2 × 1 = 16 and
// 2 × 1 × 2 = 4.
func TestParallelRanks(t *testing.T) {
	if got := (Parallel{TP: 8, PP: 2}).Ranks(); got != 16 {
		t.Errorf("tp8pp2: %d", got)
	}
	if got := (Parallel{TP: 2, PP: 1, DP: 2}).Ranks(); got != 4 {
		t.Errorf("tp2dp2: %d", got)
	}
}
