package partition_test

import (
	"testing"

	"github.com/partbench/partbench/partition"
)

// TestKVBytesPerTokenOneDefinition: the whole model's KV bytes per token
// and a tensor-parallel rank's share, by hand (2 for K and V × KV heads ×
// head_dim × element bytes):
//
//	llama-2-13b fp16, 40 KV heads × 128:  2·40·128·2 = 20,480 B
//	  TP 8: 40/8 = 5 heads               2·5·128·2  =  2,560 B
//	  TP 2: 20 heads                     2·20·128·2 = 10,240 B
//	llama-2-70b fp16, 8 KV heads × 128:   2·8·128·2  =  4,096 B
//	  TP 8: 1 head                       2·1·128·2  =    512 B
//	  TP 4: 2 heads                      2·2·128·2  =  1,024 B
//
// Every rank's share is the same, the shares sum to the whole model's, and
// the attention op and the rank's memory are built from the share.
func TestKVBytesPerTokenOneDefinition(t *testing.T) {
	for _, c := range []struct {
		preset         string
		tp             int
		whole, perRank int64
		kvHeadsPerRank int
	}{
		{"llama-2-13b", 1, 20480, 20480, 40},
		{"llama-2-13b", 2, 20480, 10240, 20},
		{"llama-2-13b", 8, 20480, 2560, 5},
		{"llama-2-70b", 4, 4096, 1024, 2},
		{"llama-2-70b", 8, 4096, 512, 1},
	} {
		cfg := parseModel(t, `preset = "`+c.preset+`"`, c.tp)
		p, err := partition.NewPlan(cfg)
		if err != nil {
			t.Fatalf("%s tp %d: %v", c.preset, c.tp, err)
		}
		if got := partition.KVBytesPerToken(cfg.Model); got != c.whole {
			t.Errorf("%s: KVBytesPerToken %d, want %d", c.preset, got, c.whole)
		}
		if got := partition.KVHeadsPerRank(cfg.Model, c.tp); got != c.kvHeadsPerRank {
			t.Errorf("%s tp %d: KVHeadsPerRank %d, want %d", c.preset, c.tp, got, c.kvHeadsPerRank)
		}
		var sum int64
		for tp := range c.tp {
			got := p.KVTokenBytes(tp)
			if got != c.perRank {
				t.Errorf("%s tp %d: KVTokenBytes(%d) = %d, want %d", c.preset, c.tp, tp, got, c.perRank)
			}
			if h := p.Shard(tp).KVHeads; h != c.kvHeadsPerRank {
				t.Errorf("%s tp %d: Shard(%d).KVHeads = %d, want %d", c.preset, c.tp, tp, h, c.kvHeadsPerRank)
			}
			sum += got
		}
		if sum != c.whole {
			t.Errorf("%s tp %d: the ranks' shares sum to %d B, the whole model's is %d B", c.preset, c.tp, sum, c.whole)
		}
		// The rank's memory holds its layers' caches: layers × batch ×
		// context × the share (parseModel: batch 4, context 64).
		r := p.Ranks[0]
		if want := int64(len(r.Layers)) * 4 * 64 * c.perRank; r.Memory.KVCacheBytes != want {
			t.Errorf("%s tp %d: rank 0 KV cache %d B, want %d", c.preset, c.tp, r.Memory.KVCacheBytes, want)
		}
	}
}
