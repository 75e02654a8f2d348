package exec

import (
	"strings"
	"testing"
)

// A reference of one sequence: prompt [5, 6] (P = 2), vocabulary 3,
// greedy ids [2, 0] (G = 2). The forced prompts are the prompt and the
// first greedy id: [5, 6, 2], whose stepwise run has logits at positions
// 0, 1 and 2 (P + G − 1 = 3).
func tinyReference() *Reference {
	return &Reference{
		PromptIDs: [][]int{{5, 6}},
		Logits:    [][][]float64{{{0.1, 0.2, 0.3}, {-0.5, 0.25, 2.0}}},
		GreedyIDs: [][]int{{2, 0}},
	}
}

func TestReferenceForcedPrompts(t *testing.T) {
	got := tinyReference().ForcedPrompts()
	if len(got) != 1 || len(got[0]) != 3 || got[0][0] != 5 || got[0][1] != 6 || got[0][2] != 2 {
		t.Fatalf("forced prompts %v, want [[5 6 2]]", got)
	}
}

func TestCompareReference(t *testing.T) {
	const tol = 1e-2
	for _, tc := range []struct {
		name     string
		logits   [][]float32 // positions 0, 1, 2
		pass     bool
		maxAbs   float64
		mismatch int
		fail     string
		settled  int
	}{
		// Exact copies; argmax at position 1 is id 2, at position 2 id 0.
		// Top-2 gaps: position 1 2.0 − 0.25 = 1.75 against 4·tol·2.0 = 0.08,
		// position 2 1 − 0 = 1 against 4·tol·1 = 0.04: both greedy ids settled.
		{"equal", [][]float32{{0.1, 0.2, 0.3}, {-0.5, 0.25, 2.0}, {1, 0, 0}}, true, 0, 0, "", 2},
		// |Δ| 0.015 at a logit of 2.0: relative 0.015/2 = 0.0075 ≤ 1e-2 (passes);
		// 0.011 at 0.3 is 0.011 > 1e-2 (fails).
		{"relative above 1", [][]float32{{0.1, 0.2, 0.3}, {-0.5, 0.25, 2.015}, {1, 0, 0}}, true, 0.015, 0, "", 2},
		{"absolute below 1", [][]float32{{0.1, 0.2, 0.311}, {-0.5, 0.25, 2.0}, {1, 0, 0}}, false, 0.011, 0, "sequence 0 position 0 id 2", 2},
		// Position 2's argmax is id 1 (0.515) instead of 0 (0.5): a gap of
		// 0.015 ≤ 2·tol·max(1, 0.515) = 0.02, a near-tie.
		{"near tie", [][]float32{{0.1, 0.2, 0.3}, {-0.5, 0.25, 2.0}, {0.5, 0.515, 0}}, true, 0, 1, "", 1},
		// The right id at position 2 but by a gap of 0.03 ≤ 4·tol·1 = 0.04
		// (more than the 0.02 a mismatch would be allowed): not settled.
		{"close but right", [][]float32{{0.1, 0.2, 0.3}, {-0.5, 0.25, 2.0}, {0.53, 0.5, 0}}, true, 0, 0, "", 1},
		// A gap of 0.5 is no near-tie.
		{"wrong id", [][]float32{{0.1, 0.2, 0.3}, {-0.5, 0.25, 2.0}, {0.5, 1.0, 0}}, false, 0, 1, "greedy id 1: 1, reference 0", 1},
		// A short run is refused, not read past its end.
		{"short", [][]float32{{0.1, 0.2, 0.3}, {-0.5, 0.25, 2.0}}, false, 0, 0, "logits at 2 positions, want 3", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CompareReference("ref.json", tinyReference(), GenerateResult{Logits: [][][]float32{tc.logits}}, tol)
			if res.Pass != tc.pass {
				t.Fatalf("pass %v, want %v: %v", res.Pass, tc.pass, res.Failures)
			}
			if d := res.MaxAbsErr - tc.maxAbs; d > 1e-6 || d < -1e-6 {
				t.Errorf("max abs %g, want %g", res.MaxAbsErr, tc.maxAbs)
			}
			if len(res.GreedyMismatches) != tc.mismatch {
				t.Errorf("mismatches %+v, want %d", res.GreedyMismatches, tc.mismatch)
			}
			if tc.fail != "" && !strings.Contains(strings.Join(res.Failures, "; "), tc.fail) {
				t.Errorf("failures %v lack %q", res.Failures, tc.fail)
			}
			if tc.settled >= 0 && (len(res.GreedySettled) != 1 || res.GreedySettled[0] != tc.settled) {
				t.Errorf("settled %v, want [%d]", res.GreedySettled, tc.settled)
			}
			if tc.pass && res.GreedyCompared != 2 && tc.name != "short" {
				t.Errorf("greedy compared %d, want 2", res.GreedyCompared)
			}
		})
	}
}

func TestReferenceValidate(t *testing.T) {
	for _, tc := range []struct {
		edit func(r *Reference)
		want string
	}{
		{func(r *Reference) { r.PromptIDs = nil }, "prompt_ids is missing"},
		{func(r *Reference) { r.Logits[0] = r.Logits[0][:1] }, "logits[0] has 1 positions, the prompt has 2"},
		{func(r *Reference) { r.Logits[0][1] = r.Logits[0][1][:2] }, "logits[0][1] has 2 values, logits[0][0] has 3"},
		{func(r *Reference) { r.GreedyIDs = [][]int{{}} }, "greedy_ids[0] is empty"},
		{func(r *Reference) { r.GreedyIDs = nil }, "greedy_ids has 0 sequences, prompt_ids 1"},
	} {
		r := tinyReference()
		tc.edit(r)
		err := r.Validate("ref.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "ref.json: ") {
			t.Errorf("error %v, want ref.json: … %q", err, tc.want)
		}
	}
	if err := tinyReference().Validate("ref.json"); err != nil {
		t.Error(err)
	}
}
