package cpu

import (
	"context"
	"time"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Checkpoint is this backend's part of the Hugging Face workflow (exec/hf):
// float32 ranks whose weights are the shards weights makes, fed in,
// connected in process by exec/localcomm and, launched, by newComm (nil:
// in-process only).
func Checkpoint(newComm hf.NewCommFunc) hf.Backend {
	return hf.Backend{
		Name: "cpu", DType: "fp32",
		NewCompute: func(plan *partition.Plan, rank int, weights hf.Weights, in *model.Inputs) (pexec.Compute, error) {
			return NewWith(plan, rank, Options{Weights: weights, Inputs: in})
		},
		NewComms:           localcomm.Comms,
		NewComm:            newComm,
		Tolerance:          pexec.DefaultTolerance,
		ReferenceTolerance: ReferenceTolerance,
	}
}

// ReferenceTolerance bounds this backend's logits against transformers'
// fp32 logits (docs/numerics.md, "Checkpoints against transformers").
const ReferenceTolerance = 1e-4

// FromCheckpoint makes ranks whose weights are their own slices of the
// checkpoint w (of config hf), fed the run's token ids: the NewCompute of
// exec.Generate for a Hugging Face model directory.
func FromCheckpoint(w *checkpoint.Weights, c *checkpoint.Config) func(*partition.Plan, int, *model.Inputs) (pexec.Compute, error) {
	m := &hf.Model{Dir: w.Dir, Config: c, Weights: w}
	return m.Computes(Checkpoint(nil))
}

// CheckpointCheck is exec.Check's options for in-process CPU ranks whose
// weights are their slices of the checkpoint w (of config hf), fed the
// seeded token schedule (ids within the vocabulary).
func CheckpointCheck(w *checkpoint.Weights, c *checkpoint.Config) pexec.CheckOptions {
	from := FromCheckpoint(w, c)
	return pexec.CheckOptions{
		NewCompute: func(plan *partition.Plan, rank int) (pexec.Compute, error) { return from(plan, rank, nil) },
		NewComms:   localcomm.Comms,
	}
}

// CheckModelDir checks every partitioning of at most maxRanks ranks that
// run's model allows against the single rank, all on this backend with the
// checkpoint's weights (hf.CheckModelDir).
func CheckModelDir(ctx context.Context, run configs.ModelDirRun, maxRanks int, opts pexec.CheckOptions) ([]pexec.CheckResult, error) {
	return hf.CheckModelDir(ctx, run, maxRanks, hf.CheckOptions{Backend: Checkpoint(nil), DecodeSteps: opts.DecodeSteps, Tolerance: opts.Tolerance})
}

// GenerateDir is one generation of a Hugging Face model directory on the CPU
// backend (hf.Generation with the communicator of launched ranks).
type GenerateDir struct {
	// Dir is the model directory (absolute: launched ranks share it).
	Dir     string
	Prompts [][]int
	// NewTokens per sequence; Stepwise also returns the logits at every
	// prompt position.
	NewTokens, TP, PP, Microbatches int
	Stepwise                        bool
	// Env is this process's place: a single process runs every rank over
	// exec/localcomm; a launched rank reads only its own slices and talks
	// TCP (NewComm), and only rank 0 gets a result.
	Env         launch.Env
	JoinTimeout time.Duration
	NewComm     func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c pexec.Compute) (pexec.Comm, error)
}

func (g GenerateDir) generation() hf.Generation {
	return hf.Generation{Dir: g.Dir, Prompts: g.Prompts, NewTokens: g.NewTokens, TP: g.TP, PP: g.PP, Microbatches: g.Microbatches,
		Stepwise: g.Stepwise, Env: g.Env, JoinTimeout: g.JoinTimeout}
}

// Config is g's run config and the directory's config.json, without
// reading weights: a launcher checks them once before it starts ranks.
func (g GenerateDir) Config() (*configs.Config, *checkpoint.Config, error) {
	cfg, err := g.generation().Config()
	if err != nil {
		return nil, nil, err
	}
	if d := cfg.Model.Description(); d != nil {
		return cfg, d, nil // config.json read once, by configs
	}
	hf, err := checkpoint.ReadConfig(g.Dir)
	return cfg, hf, err
}

// Generate runs g on this backend (hf.Generate). Errors name the
// directory, file or tensor at fault; the result is nil on ranks other
// than 0.
func Generate(ctx context.Context, g GenerateDir) (*pexec.GenerateResult, error) {
	return hf.Generate(ctx, g.generation(), Checkpoint(g.NewComm))
}
