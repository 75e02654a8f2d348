package report

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/compare"
)

func TestLayerRange(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{3}, "3"}, {[]int{0, 1, 2, 3}, "0–3"}, {[]int{0, 1, 3, 5, 6}, "0–1,3,5–6"}} {
		if got := layerRange(c.in); got != c.want {
			t.Errorf("layerRange(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A measured rank without an implied residency says why its cell is "—".
func TestL2GridsSayWhyNoImpliedResidency(t *testing.T) {
	ss := []compare.L2Strategy{{Name: "s", Ranks: []compare.L2Rank{{Rank: 0, Layers: []int{0}, Measured: &calib.Reuse{MeasuredBytes: 1e6, ReuseBytesPerS: 2e10, StreamBytesPerS: 1e10, Ratio: 2}}}}}
	gs := L2Grids(ss, true)
	if got := strings.Join(gs[1].Notes, "\n"); !strings.Contains(got, "implied residency —: it needs the cache bandwidth of a calibration") {
		t.Errorf("notes %q", got)
	}
	f := 0.5
	ss[0].Ranks[0].ImpliedResidency = &f
	if got := strings.Join(L2Grids(ss, true)[1].Notes, "\n"); strings.Contains(got, "implied residency —") {
		t.Errorf("a rank with an implied residency still explains a dash: %q", got)
	}
}

// The GPU probe's reads with a persisting window get two columns; the CPU
// probe's grids keep theirs. 3e10 B/s is 30.0 GB/s; 3e10 / 1e10 = 3.00.
func TestL2GridsWindowColumns(t *testing.T) {
	m := calib.Reuse{MeasuredBytes: 1e6, ReuseBytesPerS: 2e10, StreamBytesPerS: 1e10, Ratio: 2}
	ss := []compare.L2Strategy{{Name: "s", Ranks: []compare.L2Rank{{Rank: 0, Layers: []int{0}, Measured: &m}}}}
	g := L2Grids(ss, true)[1]
	if len(g.Header) != 11 || len(g.Rows[0]) != 11 {
		t.Fatalf("CPU probe: %d columns, %d cells; want 11", len(g.Header), len(g.Rows[0]))
	}
	m.WindowBytesPerS, m.WindowRatio = 3e10, 3
	g = L2Grids(ss, true)[1]
	if len(g.Header) != 13 || g.Header[11] != "re-read, persisting L2 window (GB/s)" || g.Header[12] != "window / stream" {
		t.Fatalf("GPU probe header %q", g.Header)
	}
	if got := g.Rows[0][11:]; got[0] != "30.0" || got[1] != "3.00" {
		t.Errorf("window cells %q, want 30.0 and 3.00", got)
	}
}
