package partition

import (
	"errors"
	"testing"

	"github.com/partbench/partbench/configs"
)

// NewPlan's memory failure is a typed error a search can read without
// parsing its text (issue 11 item 2).
func TestNoFitErrorIsTyped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(*configs.Config)
		reason string
	}{
		// KV alone: 1024 × 10,000 × 16,384 B = 167.8 GB per rank > 83.37 GB.
		{"kv cache", func(c *configs.Config) { c.Workload.Batch = 1024 }, "weights + KV cache exceed usable HBM"},
		// Weights alone: 1 GiB of HBM less 0.5 GiB reserved leaves
		// 536,870,912 B, less than one layer's 536,887,296 B (layerwise16
		// holds at least one layer a rank).
		{"weights", func(c *configs.Config) { c.Hardware.HBMBytes = 1 << 30; c.Hardware.HBMReservedBytes = 1 << 29 }, "weights exceed usable HBM"},
	} {
		c, err := configs.Load("layerwise16")
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(c)
		_, err = NewPlan(c)
		var nf *NoFitError
		if !errors.As(err, &nf) {
			t.Fatalf("%s: want a NoFitError, got %v", tc.name, err)
		}
		if nf.Reason() != tc.reason || nf.Memory.TotalBytes <= nf.Memory.CapacityBytes {
			t.Errorf("%s: reason %q (want %q), memory %+v", tc.name, nf.Reason(), tc.reason, nf.Memory)
		}
	}
	// A config error is not a NoFitError.
	c, _ := configs.Load("layerwise16")
	c.Parallel.TP = 3
	var nf *NoFitError
	if _, err := NewPlan(c); err == nil || errors.As(err, &nf) {
		t.Errorf("a validation error reads as no-fit: %v", err)
	}
}
