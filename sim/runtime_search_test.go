package sim

import (
	"math"
	"testing"
)

// search --runtime acts on the closed form and on the full re-run: on
// llama2-13b-2k (one H100, one candidate, batch 1) hf-generate's host
// (4 ms + 10 µs per sequence per step, 15 µs per kernel instead of 2 ms and
// 6 µs) makes TPOT longer by at least 2.01 ms, and the full re-run agrees;
// nemo leaves it as no runtime does.
func TestRunSearchTakesTheRuntime(t *testing.T) {
	tpot := func(runtime string) (quick, full float64) {
		t.Helper()
		r := SearchRequest{Config: "llama2-13b-2k", Objective: ObjectiveTPOT, Top: 1, Full: 1, DecodeSteps: 3, MaxMicrobatches: 1, Runtime: runtime}
		_, res, err := RunSearch(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) == 0 || res.Rows[0].Quick == nil || res.Rows[0].Full == nil {
			t.Fatalf("runtime %q: rows %+v", runtime, res.Rows)
		}
		return res.Rows[0].Quick.TPOTS, res.Rows[0].Full.TPOTS
	}
	q0, f0 := tpot("")
	qn, fn := tpot("nemo")
	qh, fh := tpot("hf-generate")
	if qn != q0 || fn != f0 {
		t.Errorf("nemo moved TPOT: quick %g → %g, full %g → %g", q0, qn, f0, fn)
	}
	if qh-q0 < 2.01e-3 || fh-f0 < 2.01e-3 {
		t.Errorf("hf-generate: quick %g → %g s, full %g → %g s; want ≥ 2.01 ms longer", q0, qh, f0, fh)
	}
	if math.Abs(qh-fh) > 0.05*fh {
		t.Errorf("hf-generate: quick %g s and full %g s disagree", qh, fh)
	}
}
