package cpu

import (
	"github.com/partbench/partbench/checkpoint"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// FromCheckpoint makes ranks whose weights are their own slices of the
// checkpoint w (of config hf), fed the run's token ids: the NewCompute of
// exec.Generate for a Hugging Face model directory.
func FromCheckpoint(w *checkpoint.Weights, hf *checkpoint.Config) func(*partition.Plan, int, *model.Inputs) (pexec.Compute, error) {
	return func(plan *partition.Plan, rank int, in *model.Inputs) (pexec.Compute, error) {
		return NewWith(plan, rank, Options{
			Weights: func(s model.Shard) (model.Source, error) { return model.NewCheckpoint(w, hf, s), nil },
			Inputs:  in,
		})
	}
}
