package partition_test

import (
	"fmt"
	"testing"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/partition"
)

// TestPlanDType: the plan's element type is the config's, typed, and every
// byte count the plan makes uses its size. tiny-gpt2 (kv_heads = heads = 2,
// head_dim 1): the KV cache of one token in one layer is 2·2·1 elements.
func TestPlanDType(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     arch.DType
		bytes int // IEEE binary32 4, binary16 and bfloat16 2, 8-bit float 1
	}{{"fp32", arch.FP32, 4}, {"fp16", arch.FP16, 2}, {"bf16", arch.BF16, 2}, {"fp8", arch.FP8, 1}} {
		cfg := parseModel(t, fmt.Sprintf("preset = \"tiny-gpt2\"\ndtype = %q", c.name), 1)
		p, err := partition.NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p.DType != c.d || p.DTypeBytes != c.bytes || partition.DTypeBytes(c.name) != c.bytes {
			t.Errorf("%s: plan dtype %v of %d B, DTypeBytes %d; want %v of %d B", c.name, p.DType, p.DTypeBytes, partition.DTypeBytes(c.name), c.d, c.bytes)
		}
		if got := partition.KVBytesPerToken(cfg.Model); got != int64(2*2*1*c.bytes) {
			t.Errorf("%s: KV bytes per token %d, want %d", c.name, got, 2*2*1*c.bytes)
		}
	}
}
