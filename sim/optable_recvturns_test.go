package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestRecvWaitShared: layerwise16-tiny's 16 ranks on 2 cores (n/C = 8),
// the spin ring's receive wait R = 10 µs and the one between turns
// R_turns = 20 µs, both after a 30 µs burst:
//
//	stretch   share = clamp((stretch − 1)/(8 − 1), 0, 1)   R_turns·(1 − share) + R·share
//	1         0                                            20 µs
//	4.5       0.5                                          15 µs
//	8         1                                            10 µs
//	12        1                                            10 µs
//
// without a turns entry R (10 µs) at every stretch, and nothing on a host
// of other cores.
func TestRecvWaitShared(t *testing.T) {
	e := func(kind string, size int64, ts float64) configs.OpTime {
		return configs.OpTime{Kind: kind, Shape: "cores=2", Size: size, TimeS: ts, TimeMinS: ts, TimeMaxS: ts, Samples: 1, Ranks: 16}
	}
	plan := func(cores int) *partition.Plan { return coresPlan(t, "test/layerwise16-tiny", cores, nil, nil) }
	two := plan(2)
	ring := e(configs.RecvWaitKind, 30_000, 10e-6)
	both := NewOpTable([]configs.OpTime{ring, e(configs.RecvWaitTurnsKind, 30_000, 20e-6)})
	for _, c := range []struct{ stretch, want float64 }{{1, 20e-6}, {4.5, 15e-6}, {8, 10e-6}, {12, 10e-6}} {
		if got := recvWaitSharedS(both, two, 30e-6, c.stretch); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("stretch %g: %.6g s, want %.6g s", c.stretch, got, c.want)
		}
	}
	only := NewOpTable([]configs.OpTime{ring})
	for _, st := range []float64{1, 4.5, 8} {
		if got := recvWaitSharedS(only, two, 30e-6, st); math.Abs(got-10e-6) > 1e-15 {
			t.Errorf("no turns entry, stretch %g: %.6g s, want 10 µs", st, got)
		}
	}
	if got := recvWaitSharedS(both, plan(4), 30e-6, 1); got != 0 {
		t.Errorf("4 cores: %g s, want 0 (measured on 2)", got)
	}
}
