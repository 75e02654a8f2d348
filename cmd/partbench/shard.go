package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/checkpoint/shards"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/partition"
)

func newShardCmd() *cobra.Command {
	var dir string
	var tp, pp int
	cmd := &cobra.Command{
		Use:   "shard --model-dir DIR --tp N",
		Short: "Write a Hugging Face checkpoint's per-rank files for a TP degree, read by generate and run --check",
		Long: `shard reads each TP index's slices of a Hugging Face model directory once and
writes them, laid out as partbench's tensors and in the checkpoint's own element
type, into one safetensors file per TP index under DIR/` + shards.ShardsDir + `/.
Afterwards every rank of a partitioning with that TP degree (any number of
pipeline stages) reads its tensors as one run of its own file, front to back,
with nothing to slice or transpose: at high TP degrees a rank reading its
slices from the checkpoint reads most of each row-parallel tensor's pages
(docs/checkpoints.md, "Pre-sharded files"). generate and run --check
--model-dir use the files when they are there and say so; a file written from
other checkpoint files (names, sizes, times or tensors changed) is refused.
--pp orders each file's tensors stage by stage for that many stages.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return &exitError{2, fmt.Errorf("shard: --model-dir is required")}
			}
			if tp < 1 || pp < 1 {
				return &exitError{2, fmt.Errorf("shard: --tp %d --pp %d: each must be at least 1", tp, pp)}
			}
			cfg, err := configs.GenerateConfig(dir, 1, 4, 2, tp, pp, 1) // the shape alone matters
			if err != nil {
				return &exitError{2, fmt.Errorf("shard: %w", err)}
			}
			plan, err := partition.NewPlan(cfg)
			if err != nil {
				return &exitError{2, fmt.Errorf("shard: --tp %d --pp %d: %w", tp, pp, err)}
			}
			m, err := hf.OpenFor(cfg, dir)
			if err != nil {
				return err
			}
			defer m.Close()
			out := cmd.OutOrStdout()
			for i := 0; i < tp; i++ {
				start := time.Now()
				path, n, err := shards.WriteSharded(dir, m.Weights, m.Config, plan.Shard(i), shards.StageTensors(plan, i))
				if err != nil {
					return fmt.Errorf("shard: TP index %d: %w", i, err)
				}
				fmt.Fprintf(out, "TP index %d: %s (%.1f MB, %.2f s)\n", i, path, float64(n)/1e6, time.Since(start).Seconds())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "model-dir", "", "Hugging Face model directory (config.json + model.safetensors or sharded)")
	f.IntVar(&tp, "tp", 1, "tensor-parallel degree the files are for")
	f.IntVar(&pp, "pp", 1, "pipeline stages to order each file's tensors for (any number reads them)")
	return cmd
}
