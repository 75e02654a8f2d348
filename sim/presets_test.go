package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
)

// presetPairs puts every hardware preset on a topology of its kind.
var presetPairs = map[string]string{
	"a100-sxm-40g": "hgx-a100", "a100-sxm-80g": "hgx-a100", "a100-pcie-40g": "pcie-gen4", "a100-pcie-80g": "pcie-gen4",
	"h100-sxm": "hgx-h100", "h100-pcie": "pcie-gen5", "h100-nvl": "pcie-gen5", "h200-sxm": "hgx-h200", "h20": "hgx-h20",
	"l40s": "pcie-gen4", "b200": "hgx-b200", "gb200": "gb200-nvl72", "mi300x": "mi300x-8",
}

// Every hardware preset, on its topology, gives a finite estimate of
// Llama-2-70B (TP 8 over each node; PP across the rest), and every topology preset is used by some pair.
func TestEveryHardwarePresetEstimates(t *testing.T) {
	used := map[string]bool{"dgx-h100x2": true, "nvl16": true}
	for i, hw := range configs.Presets("hardware") {
		topo, ok := presetPairs[hw]
		if !ok {
			t.Errorf("hardware preset %s has no topology in presetPairs", hw)
			continue
		}
		used[topo] = true
		_, tp, err := configs.LoadSystem(hw, topo)
		if err != nil {
			t.Errorf("%s on %s: %v", hw, topo, err)
			continue
		}
		pp := tp.Size() / 8
		// Every other preset under the vLLM runtime (graphs, custom all-reduce).
		for _, rt := range []string{[]string{"", "vllm"}[i%2]} {
			cfg := fmt.Sprintf(`version = 1
[model]
preset = "llama-2-70b"
[workload]
batch = 8
context = 1024
output_tokens = 64
[parallel]
tp = 8
pp = %d
microbatches = 1
[hardware]
preset = "%s"
[topology]
preset = "%s"
[run]
iterations = 1
`, pp, hw, topo)
			e := estimateRuntime(t, cfg, rt)
			for _, v := range []float64{e.Prefill.TTFTS, e.Decode.TPOTS, e.Decode.TokensPerS, e.Range.TPOTS.Min, e.Range.TPOTS.Max} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
					t.Errorf("%s on %s (runtime %q): estimate not finite and positive: TTFT %g TPOT %g TPS %g range %+v", hw, topo, rt, e.Prefill.TTFTS, e.Decode.TPOTS, e.Decode.TokensPerS, e.Range.TPOTS)
					break
				}
			}
			if e.Decode.TPOTS < e.Decode.HBMLowerBoundTPOTS {
				t.Errorf("%s: TPOT %g below its HBM floor %g", hw, e.Decode.TPOTS, e.Decode.HBMLowerBoundTPOTS)
			}
		}
	}
	for _, topo := range configs.Presets("topology") {
		if !used[topo] {
			t.Errorf("topology preset %s is used by no hardware preset in this test", topo)
		}
	}
}
