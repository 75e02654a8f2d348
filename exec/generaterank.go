package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// GenerateRankOptions configures one rank of a multi-process Generate.
type GenerateRankOptions struct {
	// NewTokens and Stepwise are GenerateOptions'.
	NewTokens int
	Stepwise  bool
	Env       launch.Env
	// NewCompute builds this rank's Compute feeding in (it must implement
	// Inspector); NewComm its communicator, as in RunOptions.
	NewCompute func(plan *partition.Plan, rank int, in *model.Inputs) (Compute, error)
	NewComm    func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c Compute) (Comm, error)
	// JoinTimeout bounds the rendezvous (0: its default).
	JoinTimeout time.Duration
}

// generatePayload is what a rank sends rank 0 after a generation.
type generatePayload struct {
	Out       [][][]float32  `json:"out"`     // [step][mb], last stage only
	Sampled   [][][]int      `json:"sampled"` // [step][mb]
	CountDiff *RankCountDiff `json:"count_diff,omitempty"`
}

// GenerateRank is this process's rank of Generate run by a launcher (one
// process per rank: partbench's own, mpirun, srun): it joins the
// rendezvous, builds its Compute (reading only its own weights) and
// communicator, runs the prefill and decode steps, and gathers every rank's
// outputs and communication counts on rank 0, which returns the result
// (other ranks return nil). It computes what Generate computes in-process.
func GenerateRank(ctx context.Context, cfg *configs.Config, prompts [][]int, o GenerateRankOptions) (*GenerateResult, error) {
	if o.NewCompute == nil || o.NewComm == nil {
		return nil, errors.New("generate: NewCompute and NewComm are required")
	}
	plan, steps, err := generatePlan(cfg, prompts, o.NewTokens, o.Stepwise)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	sess, ctx, release, err := joinLaunched(ctx, plan, o.Env, host, o.JoinTimeout)
	if err != nil {
		return nil, err
	}
	defer release()
	rank := o.Env.Rank
	fail := func(err error) (*GenerateResult, error) { return nil, sess.Cause(err, 2*time.Second) }

	in := &model.Inputs{Prompts: prompts, Greedy: true}
	compute, err := o.NewCompute(plan, rank, in)
	if err != nil {
		return fail(fmt.Errorf("compute backend: %w", err))
	}
	defer compute.Close()
	if _, ok := compute.(Inspector); !ok {
		return fail(fmt.Errorf("rank %d: compute %T does not report outputs (Output, Sampled)", rank, compute))
	}
	comm, err := o.NewComm(ctx, sess, plan, rank, compute)
	if err != nil {
		return fail(fmt.Errorf("communicator: %w", err))
	}
	defer comm.Close()
	out, err := runCheckRank(ctx, plan, rank, steps, compute, comm, nil)
	if err != nil {
		return fail(err)
	}
	all, err := gatherAtRankZero(ctx, comm, sess, generatePayload{Out: out.out, Sampled: out.sampled, CountDiff: countDiff(plan, rank, steps, comm)}, "generate: outputs")
	if err != nil || rank != 0 {
		return nil, err
	}
	outs := make([]rankOut, len(all))
	var diffs []RankCountDiff
	for r, g := range all {
		if plan.LastStage(plan.Ranks[r].Stage) {
			if len(g.Out) != steps+1 || len(g.Sampled) != steps+1 {
				return nil, fmt.Errorf("generate: rank %d returned %d steps, want %d", r, len(g.Out), steps+1)
			}
			for s := range g.Out {
				if len(g.Out[s]) != plan.Microbatches || len(g.Sampled[s]) != plan.Microbatches {
					return nil, fmt.Errorf("generate: rank %d step %d returned %d micro-batches, want %d", r, s, len(g.Out[s]), plan.Microbatches)
				}
			}
		}
		outs[r] = rankOut{out: g.Out, sampled: g.Sampled}
		if g.CountDiff != nil {
			diffs = append(diffs, *g.CountDiff)
		}
	}
	run, err := assembleCheckRun(plan, steps, outs, diffs)
	if err != nil {
		return nil, fmt.Errorf("generate: %s: %w", plan, err)
	}
	res, err := generateResult(cfg, plan, prompts, o.Stepwise, run)
	if err != nil {
		return nil, err
	}
	return &res, nil
}
