package hf

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/launch"
)

// Generation is one greedy generation of a Hugging Face model directory:
// the prompts, the partitioning and how this process takes part.
type Generation struct {
	// Dir is the model directory (absolute: launched ranks share it).
	Dir     string
	Prompts [][]int
	// NewTokens per sequence; Stepwise also returns the logits at every
	// prompt position.
	NewTokens, TP, PP, Microbatches int
	Stepwise                        bool
	// Env is this process's place: a single process runs every rank over
	// the backend's NewComms; a launched rank reads only its own slices and
	// connects through the backend's NewComm, and only rank 0 gets a result.
	Env         launch.Env
	JoinTimeout time.Duration
}

// Config is g's run config, from the directory's config.json, without
// reading weights: a launcher checks it once before it starts ranks.
func (g Generation) Config() (*configs.Config, error) {
	if len(g.Prompts) == 0 {
		return nil, errors.New("generate: no prompts")
	}
	cfg, err := configs.GenerateConfig(g.Dir, len(g.Prompts), len(g.Prompts[0])+g.NewTokens, g.NewTokens, g.TP, g.PP, g.Microbatches)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	return cfg, nil
}

// Generate runs g on backend b: the config from the directory's
// config.json (configs.GenerateConfig), each rank's weights its slices of
// the mmapped checkpoint (Model.Shards), greedy decoding with the KV cache
// (exec.GenerateAs). Errors name the directory, file or tensor at fault;
// the result is nil on launched ranks other than 0.
func Generate(ctx context.Context, g Generation, b Backend) (*pexec.GenerateResult, error) {
	cfg, err := g.Config()
	if err != nil {
		return nil, err
	}
	m, err := OpenFor(cfg, g.Dir)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Generate(ctx, cfg, g, b)
}

// Generate runs g with m's weights under cfg (Generation.Config's).
func (m *Model) Generate(ctx context.Context, cfg *configs.Config, g Generation, b Backend) (*pexec.GenerateResult, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	o := pexec.GenerateRankOptions{
		NewTokens: g.NewTokens, Stepwise: g.Stepwise, Env: g.Env, JoinTimeout: g.JoinTimeout,
		NewCompute: m.Computes(b), NewComm: b.NewComm,
	}
	if g.Env.Source != launch.SourceSingle {
		if b.NewComm == nil {
			return nil, fmt.Errorf("generate: --backend %s runs every rank in one process (started by %s: run it without a launcher)", b.Name, g.Env.Source)
		}
		if b.LaunchedDType != "" && b.LaunchedDType != cfg.Model.DType {
			c := *cfg
			c.Model.DType = b.LaunchedDType
			cfg = &c
		}
	}
	return pexec.GenerateAs(ctx, cfg, g.Prompts, o, b.NewComms)
}
