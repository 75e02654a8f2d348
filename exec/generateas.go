package exec

import (
	"context"
	"fmt"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/launch"
)

// GenerateAs runs a generation as this process finds itself: every rank in
// process, connected by newComms, when o.Env is a single process (Generate);
// else o.Env's rank of a launched job (GenerateRank), where rank 0 returns
// the result and the other ranks nil. A launched rank's error names it.
func GenerateAs(ctx context.Context, cfg *configs.Config, prompts [][]int, o GenerateRankOptions, newComms func(size int) []Comm) (*GenerateResult, error) {
	if o.Env.Source == launch.SourceSingle {
		res, err := Generate(ctx, cfg, prompts, GenerateOptions{NewTokens: o.NewTokens, Stepwise: o.Stepwise, NewCompute: o.NewCompute, NewComms: newComms})
		if err != nil {
			return nil, err
		}
		return &res, nil
	}
	r, err := GenerateRank(ctx, cfg, prompts, o)
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", o.Env.Rank, err)
	}
	return r, nil
}
