package exec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// GenerateOptions configures Generate.
type GenerateOptions struct {
	// NewTokens is the tokens generated per sequence (≥ 1).
	NewTokens int
	// Stepwise feeds the prompt one position per pass (the first position
	// as the prefill, the others as decode steps that read the prompt's
	// ids), so the logits at every prompt position come back; otherwise the
	// whole prompt is one prefill and only the last position's logits do.
	// Both run the same function with the KV cache.
	Stepwise bool
	// NewCompute builds rank's Compute feeding in (the prompts, greedy); it
	// must implement Inspector.
	NewCompute func(plan *partition.Plan, rank int, in *model.Inputs) (Compute, error)
	// NewComms connects size in-process ranks.
	NewComms func(size int) []Comm
}

// GenerateResult is what a greedy generation produced.
type GenerateResult struct {
	Config string `json:"config"`
	Plan   string `json:"plan"`
	// GreedyIDs are each sequence's NewTokens argmax tokens.
	GreedyIDs [][]int `json:"greedy_ids"`
	// Logits are [sequence][position][vocab] at prompt positions
	// FirstPosition… (every position when stepwise, else the last).
	Logits        [][][]float32 `json:"-"`
	FirstPosition int           `json:"first_position"`
	// Reference is the comparison with an independent implementation's
	// outputs, when one was asked for (CompareReference).
	Reference *ReferenceCheck `json:"reference,omitempty"`
	// Notes say how the run was set up where a choice was made for it
	// (how rank 0 was bound to CPUs).
	Notes []string `json:"notes,omitempty"`
}

// Generate runs cfg's partitioning on prompts (token ids, one list per
// sequence, all of one length) and decodes NewTokens tokens greedily:
// workload.batch becomes the number of prompts, the context the prompt plus
// the new tokens. Every rank's counted communication must equal its
// Programs' (as in Check).
func Generate(ctx context.Context, cfg *configs.Config, prompts [][]int, opts GenerateOptions) (GenerateResult, error) {
	if opts.NewCompute == nil || opts.NewComms == nil {
		return GenerateResult{}, errors.New("generate: NewCompute and NewComms are required")
	}
	plan, steps, err := generatePlan(cfg, prompts, opts.NewTokens, opts.Stepwise)
	if err != nil {
		return GenerateResult{}, err
	}
	in := &model.Inputs{Prompts: prompts, Greedy: true}
	run, err := runCheckPlan(ctx, plan, steps, func(p *partition.Plan, r int) (Compute, error) {
		return opts.NewCompute(p, r, in)
	}, opts.NewComms)
	if err != nil {
		return GenerateResult{}, fmt.Errorf("generate: %s: %w", plan, err)
	}
	return generateResult(cfg, plan, prompts, opts.Stepwise, run)
}

// generatePlan is the plan of cfg for prompts and newTokens greedy tokens
// (stepwise: the prompt fed one position per pass) and the decode steps
// after the prefill.
func generatePlan(cfg *configs.Config, prompts [][]int, newTokens int, stepwise bool) (*partition.Plan, int, error) {
	if newTokens < 1 {
		return nil, 0, fmt.Errorf("generate: new tokens must be ≥ 1 (got %d)", newTokens)
	}
	if len(prompts) == 0 || len(prompts[0]) == 0 {
		return nil, 0, errors.New("generate: no prompt ids (want a list of token-id lists)")
	}
	P := len(prompts[0])
	for i, p := range prompts {
		if len(p) != P {
			return nil, 0, fmt.Errorf("generate: prompt %d has %d ids, prompt 0 has %d: prompts must have one length", i, len(p), P)
		}
		for j, id := range p {
			if cfg.Model.Vocab > 0 && (id < 0 || id >= cfg.Model.Vocab) {
				return nil, 0, fmt.Errorf("generate: prompt %d position %d: id %d outside the vocabulary [0, %d)", i, j, id, cfg.Model.Vocab)
			}
		}
	}
	if !cfg.Model.LMHead {
		return nil, 0, errors.New("generate: the model has no LM head (model.lm_head = false): nothing to decode")
	}
	c := *cfg
	c.Parallel.LayerMap = slices.Clone(cfg.Parallel.LayerMap)
	c.Workload.Batch = len(prompts)
	c.Workload.Context = P + newTokens
	c.Workload.OutputTokens = newTokens
	c.Workload.Phases = []string{"prefill", "decode"}
	c.Parallel.PrefillChunk = 0
	steps := newTokens - 1
	if stepwise {
		c.Workload.OutputTokens = P + newTokens - 1
		steps = P + newTokens - 2
	}
	if steps == 0 {
		// The prefill samples the one token: a prefill-only workload
		// (whose output_tokens must be ≥ 2; the cache keeps one more
		// position than it uses).
		c.Workload.Phases = []string{"prefill"}
		c.Workload.OutputTokens = 2
		c.Workload.Context = P + 2
		if stepwise {
			c.Workload.Context = P + 1
		}
	}
	if err := c.Validate(); err != nil {
		return nil, 0, fmt.Errorf("generate: %w", err)
	}
	plan, err := partition.NewPlan(&c)
	if err != nil {
		return nil, 0, fmt.Errorf("generate: %w", err)
	}
	return plan, steps, nil
}

// generateResult reads the greedy ids and logits of a run of plan.
func generateResult(cfg *configs.Config, plan *partition.Plan, prompts [][]int, stepwise bool, run *checkRun) (GenerateResult, error) {
	P := len(prompts[0])
	var fails []string
	fails = append(fails, run.failures...)
	for _, d := range run.countDiffs {
		fails = append(fails, fmt.Sprintf("rank %d counted communication differs from the Program: %s", d.Rank, strings.Join(d.Diffs, ", ")))
	}
	if len(fails) > 0 {
		return GenerateResult{}, fmt.Errorf("generate: %s", strings.Join(fails, "; "))
	}
	res := GenerateResult{Config: cfg.Name, Plan: plan.String(), GreedyIDs: make([][]int, len(prompts)), Logits: make([][][]float32, len(prompts))}
	// Step k's output is the logits at position first+k; the argmax at the
	// last prompt position and after it are the greedy tokens.
	first := P - 1
	if stepwise {
		first = 0
	}
	res.FirstPosition = first
	for step := range run.out {
		pos := first + step
		for seq := range prompts {
			if len(run.tokens[step]) != len(prompts) || len(run.out[step]) != len(prompts) {
				return GenerateResult{}, fmt.Errorf("generate: step %d returned %d sequences, want %d", step, len(run.out[step]), len(prompts))
			}
			// A NaN or an infinity in the weights (or an overflow) reaches
			// every later position: refuse it at the first, rather than print
			// the argmax of NaNs (-1) as a token.
			for i, v := range run.out[step][seq] {
				if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
					return GenerateResult{}, fmt.Errorf("generate: the logits of sequence %d at position %d are not finite (index %d is %v): "+
						"the checkpoint's weights hold a NaN or an infinity, or the computation overflowed float32", seq, pos, i, v)
				}
			}
			if pos < P {
				res.Logits[seq] = append(res.Logits[seq], run.out[step][seq])
			}
			if pos >= P-1 {
				res.GreedyIDs[seq] = append(res.GreedyIDs[seq], run.tokens[step][seq])
			}
		}
	}
	return res, nil
}
