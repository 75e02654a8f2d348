package cpu_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/launch"
)

// Generate on a fixture directory, all ranks in this process (tp2 × pp2 of
// gpt2-tiny), gives transformers' greedy continuation; Config refuses what
// cannot run before any weight is read.
func TestGenerateDir(t *testing.T) {
	dir := checkpointtest.Dir(t, "gpt2-tiny")
	ref := checkpointtest.ReadReference(t, dir)
	g := cpu.GenerateDir{Dir: dir, Prompts: ref.PromptIDs, NewTokens: len(ref.GreedyIDs[0]), TP: 2, PP: 2, Microbatches: 1,
		Env: launch.Env{Source: launch.SourceSingle}}
	res, err := cpu.Generate(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	for s := range ref.GreedyIDs {
		if !slices.Equal(res.GreedyIDs[s], ref.GreedyIDs[s]) {
			t.Errorf("sequence %d: greedy %v, transformers %v", s, res.GreedyIDs[s], ref.GreedyIDs[s])
		}
	}
	// One new token is the prefill's alone (no decode step): transformers'
	// first greedy token of every sequence, through both pipeline stages.
	g.NewTokens = 1
	one, err := cpu.Generate(context.Background(), g)
	if err != nil {
		t.Fatalf("one new token: %v", err)
	}
	for s := range ref.GreedyIDs {
		if !slices.Equal(one.GreedyIDs[s], ref.GreedyIDs[s][:1]) {
			t.Errorf("one new token, sequence %d: greedy %v, transformers' first %v", s, one.GreedyIDs[s], ref.GreedyIDs[s][:1])
		}
	}
	if _, _, err := (cpu.GenerateDir{Dir: dir, NewTokens: 1, TP: 1, PP: 1, Microbatches: 1}).Config(); err == nil || !strings.Contains(err.Error(), "no prompts") {
		t.Errorf("no prompts: %v", err)
	}
	missing := t.TempDir()
	if _, _, err := (cpu.GenerateDir{Dir: missing, Prompts: ref.PromptIDs, NewTokens: 1, TP: 1, PP: 1, Microbatches: 1}).Config(); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing config.json: %v", err)
	}
}
