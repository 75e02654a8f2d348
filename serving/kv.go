package serving

import (
	"fmt"

	"github.com/partbench/partbench/partition"
)

// KVCache is a replica's paged KV cache as the memory model sizes it.
type KVCache struct {
	// BytesPerToken is one token's KV entries on the rank that holds the
	// most per token (its layers × 2 × KV width × dtype bytes).
	BytesPerToken int64 `json:"bytes_per_token"`
	// FreeBytes is that rank's usable HBM less weights and activations.
	FreeBytes int64 `json:"free_bytes"`
	BlockSize int   `json:"block_size"`
	NumBlocks int   `json:"num_blocks"`
	// Rank is the rank that limits the cache.
	Rank int `json:"rank"`
}

// KVBlocks sizes the KV cache of one replica from partition's memory
// accounting: each rank's KV bytes per token is its layers times
// Plan.KVTokenBytes (its share of the KV heads), its free memory is
// CapacityBytes − WeightBytes − ActivationBytes scaled by utilization
// (vLLM's --gpu-memory-utilization applies to the whole device; here it
// applies to what weights and activations leave), and the replica holds as
// many blocks as its tightest rank.
func KVBlocks(plan *partition.Plan, blockSize int, utilization float64) (KVCache, error) {
	if blockSize < 1 || blockSize > 1<<16 {
		return KVCache{}, fmt.Errorf("--block-size: must be in [1, %d] tokens (got %d)", 1<<16, blockSize)
	}
	if !(utilization > 0 && utilization <= 1) {
		return KVCache{}, fmt.Errorf("--gpu-memory-utilization: must be in (0, 1] (got %g)", utilization)
	}
	kv := KVCache{BlockSize: blockSize, NumBlocks: -1}
	for _, r := range plan.Ranks[:plan.GroupSize()] {
		m := r.Memory
		per := int64(len(r.Layers)) * plan.KVTokenBytes(r.TPIndex)
		if per <= 0 {
			continue
		}
		free := int64(float64(m.CapacityBytes-m.WeightBytes-m.ActivationBytes) * utilization)
		blocks := max(free, 0) / per / int64(blockSize)
		if kv.NumBlocks < 0 || int(blocks) < kv.NumBlocks {
			kv.BytesPerToken, kv.FreeBytes, kv.NumBlocks, kv.Rank = per, free, int(min(blocks, 1<<40)), r.Rank
		}
	}
	if kv.NumBlocks < 0 {
		return KVCache{}, fmt.Errorf("config %s: no rank holds a KV cache", plan.Config.Name)
	}
	return kv, nil
}
