package cuda

import (
	"fmt"

	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
)

// shardSource yields the rank's weight shards as exec/cpu generates them:
// the same seeded full model, the same Megatron shard rules, float32,
// row-major [k][n]; nil for a tensor the rank does not hold.
type shardSource interface {
	Weight(layer int, tensor string) []float32
}

// hostShards generates rank's shards with exec/cpu, so the GPU holds
// exactly the weights the CPU reference holds (rounded to the element
// type). exec/cpu exports no per-tensor generator yet, so this builds a CPU
// backend for the rank and reads its shards with Weight; it runs that
// backend on a copy of the plan whose workload is one sequence of one
// token, so the CPU backend's KV cache and buffers stay a few elements
// (its weights depend only on the model, the seed, the rank's layers and
// its TP index, which the copy keeps).
func hostShards(plan *partition.Plan, rank int) (shardSource, error) {
	p := *plan
	cfg := *plan.Config
	cfg.Workload.Batch, cfg.Workload.Context, cfg.Workload.OutputTokens = 1, 1, 0
	p.Config = &cfg
	p.Microbatches, p.MicrobatchSize, p.PrefillChunk, p.PrefillChunks = 1, 1, 1, 1
	c, err := cpu.New(&p, rank)
	if err != nil {
		return nil, fmt.Errorf("generating rank %d's weights: %w", rank, err)
	}
	return c, nil
}

// tensorShape is a shard's [k][n] on this rank (docs/numerics.md,
// "Sharding"); New checks that the generated data has k·n elements.
func (c *Compute) tensorShape(name string) (k, n int) {
	m := c.plan.Model
	H, hd := m.Hidden, m.HeadDim
	hl, kvl, fl := m.Heads/c.plan.TP, m.KVHeads/c.plan.TP, m.FFN/c.plan.TP
	vl := c.vp / c.plan.TP
	up := fl
	if m.GatedMLP {
		up *= 2
	}
	switch name {
	case "wqkv":
		return H, (hl + 2*kvl) * hd
	case "wo":
		return hl * hd, H
	case "w_up":
		return H, up
	case "w_down":
		return fl, H
	case "attn_norm", "mlp_norm", "final_norm":
		return 1, H
	case "embed":
		return vl, H
	case "lm_head":
		return H, vl
	}
	return 0, 0
}
