package partition

import (
	"testing"

	"github.com/partbench/partbench/configs"
)

// OpCount equals the built Program's length for every rank and phase of
// every embedded config: chunked prefill (layerwise16), TP and PP
// (tp8pp2), DP replicas (test/tp2-dp2-tiny), a layer map, GPT-2's learned
// positions and LM head.
func TestOpCountEqualsProgramLength(t *testing.T) {
	var names []string
	names = append(names, configs.Presets("")...)
	for _, n := range configs.Presets("test") {
		names = append(names, "test/"+n)
	}
	if len(names) < 10 {
		t.Fatalf("only %d embedded configs: %v", len(names), names)
	}
	chunked := false
	for _, name := range names {
		p := plan(t, name)
		chunked = chunked || p.PrefillChunks > 1
		for r := range p.Ranks {
			for _, ph := range []Phase{Prefill, Decode} {
				if got, want := p.OpCount(r, ph), len(p.Program(r, ph).Ops); got != want {
					t.Errorf("%s rank %d %v: OpCount %d, Program has %d ops", name, r, ph, got, want)
				}
			}
		}
	}
	if !chunked {
		t.Error("no config has a chunked prefill: the not-last pass is untested")
	}
}

func TestSaturatingCounts(t *testing.T) {
	// 2^31 × 2^31 = 2^62 = MaxOpCount exactly; one more saturates.
	if got := SatMul(1<<31, 1<<31); got != MaxOpCount {
		t.Errorf("SatMul(2^31, 2^31) = %d, want %d", got, MaxOpCount)
	}
	if got := SatMul(1<<31, 1<<32); got != MaxOpCount {
		t.Errorf("SatMul(2^31, 2^32) = %d, want it saturated at %d", got, MaxOpCount)
	}
	if got := SatAdd(MaxOpCount, 1); got != MaxOpCount {
		t.Errorf("SatAdd(MaxOpCount, 1) = %d", got)
	}
	if got := SatMul(3, 7); got != 21 {
		t.Errorf("SatMul(3, 7) = %d, want 21", got)
	}
}
