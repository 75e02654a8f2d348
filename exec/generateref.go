package exec

import (
	"fmt"
	"math"
	"strings"

	"github.com/partbench/partbench/model"
)

// Reference is what an independent implementation computed for a batch of
// prompts (transformers' reference.json beside a Hugging Face fixture): the
// logits at every prompt position and the greedy continuation.
type Reference struct {
	PromptIDs [][]int       `json:"prompt_ids"`
	Logits    [][][]float64 `json:"logits"` // [sequence][prompt position][vocab]
	GreedyIDs [][]int       `json:"greedy_ids"`
}

// Validate checks that r's lists agree: one prompt length, logits at each
// prompt position of each sequence over one vocabulary, and greedy ids of
// one length for each sequence. src names the file in errors.
func (r *Reference) Validate(src string) error {
	switch {
	case len(r.PromptIDs) == 0 || len(r.PromptIDs[0]) == 0:
		return fmt.Errorf("%s: prompt_ids is missing or empty (want a list of token-id lists)", src)
	case len(r.Logits) != len(r.PromptIDs):
		return fmt.Errorf("%s: logits has %d sequences, prompt_ids %d", src, len(r.Logits), len(r.PromptIDs))
	case len(r.GreedyIDs) != len(r.PromptIDs):
		return fmt.Errorf("%s: greedy_ids has %d sequences, prompt_ids %d", src, len(r.GreedyIDs), len(r.PromptIDs))
	case len(r.GreedyIDs[0]) == 0:
		return fmt.Errorf("%s: greedy_ids[0] is empty (want at least one token)", src)
	}
	P, G, V := len(r.PromptIDs[0]), len(r.GreedyIDs[0]), 0
	if len(r.Logits[0]) > 0 {
		V = len(r.Logits[0][0])
	}
	if V == 0 {
		return fmt.Errorf("%s: logits[0] has no positions or an empty vocabulary", src)
	}
	for s := range r.PromptIDs {
		if len(r.PromptIDs[s]) != P {
			return fmt.Errorf("%s: prompt_ids[%d] has %d ids, prompt_ids[0] has %d: prompts must have one length", src, s, len(r.PromptIDs[s]), P)
		}
		if len(r.GreedyIDs[s]) != G {
			return fmt.Errorf("%s: greedy_ids[%d] has %d ids, greedy_ids[0] has %d", src, s, len(r.GreedyIDs[s]), G)
		}
		if len(r.Logits[s]) != P {
			return fmt.Errorf("%s: logits[%d] has %d positions, the prompt has %d", src, s, len(r.Logits[s]), P)
		}
		for p, row := range r.Logits[s] {
			if len(row) != V {
				return fmt.Errorf("%s: logits[%d][%d] has %d values, logits[0][0] has %d", src, s, p, len(row), V)
			}
		}
	}
	return nil
}

// ForcedPrompts are the prompts the comparison runs: each prompt followed
// by all of its greedy ids but the last, so that one stepwise pass gives
// the logits at every prompt position and at every position whose argmax is
// a greedy id (teacher forcing: a near-tie that flips one id does not
// derail the positions after it).
func (r *Reference) ForcedPrompts() [][]int {
	out := make([][]int, len(r.PromptIDs))
	for s, p := range r.PromptIDs {
		g := r.GreedyIDs[s]
		out[s] = append(append([]int(nil), p...), g[:len(g)-1]...)
	}
	return out
}

// GreedyMismatch is a greedy id that differs from the reference's.
type GreedyMismatch struct {
	Sequence  int `json:"sequence"`
	Token     int `json:"token"` // the index among the greedy ids
	Reference int `json:"reference"`
	Got       int `json:"got"`
	// Gap is the run's logit of its own argmax minus its logit of the
	// reference's id; Failure: more than 2·tolerance·max(1, |top|).
	Gap     float64 `json:"gap"`
	Failure bool    `json:"failure"`
}

// ReferenceCheck compares a run with a Reference: every prompt position's
// logits within Tolerance·max(1, |ref|), and the argmax at the last prompt
// position and after it (fed the reference's greedy ids) equal to the
// reference's greedy ids, unless the run's own logits of the two are within
// 2·Tolerance·max(1, |top|) of each other: both sides within the tolerance
// of the exact logits can swap a pair only that close (exec.Check's rule).
type ReferenceCheck struct {
	Reference        string           `json:"reference"`
	Tolerance        float64          `json:"tolerance"`
	Sequences        int              `json:"sequences"`
	Positions        int              `json:"positions"`
	MaxAbsErr        float64          `json:"max_abs_err"`
	MaxRelErr        float64          `json:"max_rel_err"`
	GreedyCompared   int              `json:"greedy_compared"`
	GreedyMismatches []GreedyMismatch `json:"greedy_mismatches,omitempty"`
	// GreedySettled is, per sequence, how many leading greedy ids no
	// rounding within the tolerance can flip: at each of them the
	// reference's id is the run's argmax and the run's top two logits are
	// more than 4·Tolerance·max(1, |top|) apart. Another run within the
	// tolerance of the exact logits (a free-running decode, another
	// partitioning) is then within twice it of this one, so its argmax is
	// the same: it must reproduce those ids, and may take another branch
	// after them.
	GreedySettled []int    `json:"greedy_settled"`
	Failures      []string `json:"failures,omitempty"`
	Pass          bool     `json:"pass"`
}

// Err is nil when the check passed, else an error listing the failures.
func (c ReferenceCheck) Err() error {
	if c.Pass {
		return nil
	}
	return fmt.Errorf("against %s: %s", c.Reference, strings.Join(c.Failures, "; "))
}

// CompareReference compares forced, a stepwise generation of
// ref.ForcedPrompts() (logits at every position from 0), with ref; src
// names the reference in the result.
func CompareReference(src string, ref *Reference, forced GenerateResult, tol float64) ReferenceCheck {
	res := ReferenceCheck{Reference: src, Tolerance: tol, Sequences: len(ref.PromptIDs)}
	fail := func(format string, a ...any) { res.Failures = append(res.Failures, fmt.Sprintf(format, a...)) }
	P, G := len(ref.PromptIDs[0]), len(ref.GreedyIDs[0])
	res.Positions = P
	if forced.FirstPosition != 0 || len(forced.Logits) != len(ref.PromptIDs) {
		fail("the run has logits of %d sequences from position %d, want %d from 0 (a stepwise run)", len(forced.Logits), forced.FirstPosition, len(ref.PromptIDs))
		return res
	}
	bad := 0
	for s := range ref.PromptIDs {
		got := forced.Logits[s]
		if len(got) != P+G-1 {
			fail("sequence %d: logits at %d positions, want %d (the prompt's %d and %d greedy ids but the last)", s, len(got), P+G-1, P, G)
			continue
		}
		for p := 0; p < P; p++ {
			want := ref.Logits[s][p]
			if len(got[p]) != len(want) {
				fail("sequence %d position %d: %d logits, the reference has %d", s, p, len(got[p]), len(want))
				continue
			}
			for v, w := range want {
				d := math.Abs(float64(got[p][v]) - w)
				rel := d / math.Max(1, math.Abs(w))
				if math.IsNaN(d) {
					rel = math.Inf(1)
				}
				res.MaxAbsErr, res.MaxRelErr = math.Max(res.MaxAbsErr, d), math.Max(res.MaxRelErr, rel)
				if rel > tol {
					if bad < maxFailureLines {
						fail("sequence %d position %d id %d: %g, reference %g (error %.3g > tolerance %g)", s, p, v, got[p][v], w, rel, tol)
					}
					bad++
				}
			}
		}
		settled := true
		res.GreedySettled = append(res.GreedySettled, 0)
		for k := 0; k < G; k++ {
			row := got[P-1+k]
			mine, want := model.Argmax(row), ref.GreedyIDs[s][k]
			res.GreedyCompared++
			if top, gap := top2Gap(row); settled && mine == want && gap > 4*tol*math.Max(1, math.Abs(top)) {
				res.GreedySettled[s]++
			} else {
				settled = false
			}
			if mine == want {
				continue
			}
			m := GreedyMismatch{Sequence: s, Token: k, Reference: want, Got: mine, Gap: math.Inf(1), Failure: true}
			if mine >= 0 && want >= 0 && want < len(row) {
				top := float64(row[mine])
				m.Gap = top - float64(row[want])
				m.Failure = !(m.Gap <= 2*tol*math.Max(1, math.Abs(top)))
			}
			res.GreedyMismatches = append(res.GreedyMismatches, m)
			if m.Failure {
				fail("sequence %d greedy id %d: %d, reference %d (the run's logits differ by %.3g > 2·tolerance)", s, k, mine, want, m.Gap)
			}
		}
	}
	if bad > maxFailureLines {
		fail("%d more logits beyond tolerance", bad-maxFailureLines)
	}
	res.Pass = len(res.Failures) == 0
	return res
}
