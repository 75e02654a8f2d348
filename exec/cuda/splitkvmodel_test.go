package cuda

import "testing"

// Decode-shaped calls (one query after a long cache, and a few queries)
// with split counts that leave empty splits, split a row unevenly, or
// give every key its own split.
var splitKVCases = []struct {
	c      flashCase
	splits []int
}{
	{flashCase{seqs: 2, hl: 4, kvl: 2, hd: 64, past: 300, q: 1}, []int{1, 2, 7, 32}},
	{flashCase{seqs: 1, hl: 2, kvl: 1, hd: 128, past: 129, q: 1}, []int{3, 130}},
	{flashCase{seqs: 1, hl: 4, kvl: 4, hd: 64, past: 40, q: 5}, []int{4, 64}}, // rows see 41..45 keys: trailing splits empty for the shorter
	{flashCase{seqs: 1, hl: 2, kvl: 2, hd: 64, past: 0, q: 1}, []int{8}},      // one key, seven empty splits
	{flashCase{seqs: 1, hl: 2, kvl: 1, hd: 64, past: 50, q: 3, bidir: true}, []int{5}},
}

// TestSplitKVModelMatchesCPU holds the split-KV model against exec/cpu's
// attention. The partials are fp32 and only the output is rounded, so the
// bound is attnTol's without the P rounding: u·max|v| for the output plus
// the fp32 order-and-exp2 allowance (attnTol(u/2) = u + 4e-6).
func TestSplitKVModelMatchesCPU(t *testing.T) {
	for _, sc := range splitKVCases {
		c := sc.c
		g := c.geom()
		for _, st := range storageTypes {
			round := dtypes[st.name].round
			in := newAttnInputs(c, g, round, uint64(c.past*7+c.q), 3)
			want := cpuAttention(t, c, in)
			for _, s := range sc.splits {
				got := make([]float32, len(want))
				splitKVModel(g, s, round, in.qkv, in.kc, in.vc, got)
				if d, tol := maxAbsDiff(got, want), attnTol(st.u/2); d > tol {
					t.Errorf("%v %s, %d splits: max |model − cpu| = %.3g, tolerance %.3g", c, st.name, s, d, tol)
				}
			}
		}
	}
}

// TestSplitKVModelPlantedBug: merging the partials without rescaling them
// to the common max must fail the comparison.
func TestSplitKVModelPlantedBug(t *testing.T) {
	c := flashCase{seqs: 1, hl: 2, kvl: 1, hd: 64, past: 300, q: 1}
	g := c.geom()
	round := dtypes["fp16"].round
	in := newAttnInputs(c, g, round, 5, 3)
	want := cpuAttention(t, c, in)
	flashBug = "merge"
	got := make([]float32, len(want))
	splitKVModel(g, 4, round, in.qkv, in.kc, in.vc, got)
	flashBug = ""
	d, tol := maxAbsDiff(got, want), attnTol(0x1p-12)
	t.Logf("planted bug %q: max |model − cpu| = %.3g, tolerance %.3g", "merge", d, tol)
	if d <= tol {
		t.Errorf("a merge without rescaling is within the tolerance (%.3g ≤ %.3g): the comparison cannot catch it", d, tol)
	}
}
