package cpu

import (
	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/exec/rendezvous"
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

// CheckpointCheck is exec.Check's options for in-process CPU ranks whose
// weights are their slices of the checkpoint w (of config hf), fed the
// seeded token schedule (ids within the vocabulary).
func CheckpointCheck(w *checkpoint.Weights, hf *checkpoint.Config) pexec.CheckOptions {
	from := FromCheckpoint(w, hf)
	return pexec.CheckOptions{
		NewCompute: func(plan *partition.Plan, rank int) (pexec.Compute, error) { return from(plan, rank, nil) },
		NewComms:   localcomm.Comms,
	}
}

// CheckModelDir checks every partitioning of at most maxRanks ranks that
// run's model allows (configs.ModelDirRun.Partitionings) against the single
// rank, all with the checkpoint's weights: one result per partitioning of
// more than one rank, in order. A partitioning that fails is a result that did not pass; an error
// is a failure to read the directory or to run.
func CheckModelDir(ctx context.Context, run configs.ModelDirRun, maxRanks int, opts pexec.CheckOptions) ([]pexec.CheckResult, error) {
	base, err := run.Config()
	if err != nil {
		return nil, err
	}
	hf, err := checkpoint.ReadConfig(base.Model.Dir)
	if err != nil {
		return nil, err
	}
	w, err := checkpoint.OpenWeights(base.Model.Dir)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	co := CheckpointCheck(w, hf)
	co.DecodeSteps, co.Tolerance = opts.DecodeSteps, opts.Tolerance
	var out []pexec.CheckResult
	for _, p := range run.Partitionings(base.Model, maxRanks) {
		if p.TP*p.PP == 1 {
			continue // the reference itself
		}
		cfg, err := p.Config()
		if err != nil {
			return nil, err
		}
		res, err := pexec.Check(ctx, cfg, co)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Name, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// GenerateDir is one generation of a Hugging Face model directory on the CPU
// backend: the prompts, the partitioning and how this process takes part.
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

// Config is g's run config and the directory's config.json, without
// reading weights: a launcher checks them once before it starts ranks.
func (g GenerateDir) Config() (*configs.Config, *checkpoint.Config, error) {
	if len(g.Prompts) == 0 {
		return nil, nil, fmt.Errorf("generate: no prompts")
	}
	cfg, err := configs.GenerateConfig(g.Dir, len(g.Prompts), len(g.Prompts[0])+g.NewTokens, g.NewTokens, g.TP, g.PP, g.Microbatches)
	if err != nil {
		return nil, nil, fmt.Errorf("generate: %w", err)
	}
	hf, err := checkpoint.ReadConfig(g.Dir)
	return cfg, hf, err
}

// Generate runs g: the config from the directory's config.json
// (configs.GenerateConfig), each rank's weights from the checkpoint
// (FromCheckpoint), greedy decoding with the KV cache (exec.GenerateAs).
// Errors name the directory, file or tensor at fault; the result is nil on
// ranks other than 0.
func Generate(ctx context.Context, g GenerateDir) (*pexec.GenerateResult, error) {
	cfg, hf, err := g.Config()
	if err != nil {
		return nil, err
	}
	w, err := checkpoint.OpenWeights(g.Dir)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return pexec.GenerateAs(ctx, cfg, g.Prompts, pexec.GenerateRankOptions{
		NewTokens: g.NewTokens, Stepwise: g.Stepwise, Env: g.Env, JoinTimeout: g.JoinTimeout,
		NewCompute: FromCheckpoint(w, hf), NewComm: g.NewComm,
	}, localcomm.Comms)
}
