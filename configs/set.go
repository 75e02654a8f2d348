package configs

import (
	"fmt"
	"sort"
	"strings"
)

// Sweepable lists the keys Set accepts, for what-if sweeps.
var Sweepable = map[string]string{
	"hidden":       "model.hidden; heads and kv_heads follow at the same head_dim, ffn keeps its ratio to hidden",
	"batch":        "workload.batch",
	"context":      "workload.context (output_tokens unchanged)",
	"microbatches": "parallel.microbatches",
	"l2_bytes":     "hardware.l2_bytes",
	"output":       "workload.output_tokens",
}

// SweepKeys lists Sweepable's keys in order.
func SweepKeys() []string {
	keys := make([]string, 0, len(Sweepable))
	for k := range Sweepable {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// With returns a copy of c with key set to v, validated.
func (c *Config) With(key string, v int) (*Config, error) {
	n := *c
	n.Parallel.LayerMap = append([]int(nil), c.Parallel.LayerMap...)
	n.Workload.Phases = append([]string(nil), c.Workload.Phases...)
	switch key {
	case "hidden":
		m := &n.Model
		if v%m.HeadDim != 0 {
			return nil, fmt.Errorf("--sweep hidden=%d: must be a multiple of model.head_dim = %d", v, m.HeadDim)
		}
		groups := m.Heads / m.KVHeads
		ratio := float64(m.FFN) / float64(m.Hidden)
		m.Heads = v / m.HeadDim
		if m.Heads%groups != 0 {
			return nil, fmt.Errorf("--sweep hidden=%d: %d heads cannot keep %d query heads per KV head", v, m.Heads, groups)
		}
		m.KVHeads = m.Heads / groups
		m.FFN = int(ratio * float64(v))
		m.Hidden = v
	case "batch":
		n.Workload.Batch = v
	case "context":
		n.Workload.Context = v
	case "output":
		n.Workload.OutputTokens = v
	case "microbatches":
		n.Parallel.Microbatches = v
	case "l2_bytes":
		n.Hardware.L2Bytes = int64(v)
	default:
		return nil, fmt.Errorf("--sweep: unknown key %q (known: %s)", key, strings.Join(SweepKeys(), ", "))
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("%s with %s = %d: %w", c.Name, key, v, err)
	}
	return &n, nil
}
