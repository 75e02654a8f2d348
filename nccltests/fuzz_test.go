package nccltests

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// FuzzParseOutput feeds arbitrary text to ParseOutput. It must never panic,
// every error must name the file, and whatever it accepts must hold what
// the compare relies on: at least one row, sizes > 0 and strictly
// increasing, every figure finite and ≥ 0, #wrong ≥ 0 or −1 (N/A), line
// numbers increasing.
func FuzzParseOutput(f *testing.F) {
	// Small seeds: the engine minimises every new input, and a whole
	// fixture (3 kB) makes each minimisation take seconds. These carry the
	// fixtures' features: a Rank line, an NCCL INFO line, launcher
	// prefixes, N/A, size 0, the average.
	f.Add([]byte("#  Rank  0 Group  0 Pid 1 on h device 0 [0x1] GPU\nh:1:1 [0] NCCL INFO x\n1 1 float sum -1 1 1 1 N/A 1 1 1 N/A\n# Avg bus bandwidth : 1.5\n"))
	f.Add([]byte("[1,0]<stdout>:0 0 float none -1 0 0 0 N/A 0 0 0 N/A\n0: 8 2 float sum -1 1 1 1 0 1 1 1 0\n"))
	f.Add([]byte(miniHeader + miniRow1 + miniRow2))
	f.Add([]byte(miniHeader + strings.TrimSuffix(miniRow1, "\n") + "  2025-03-01 10:11:12\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseOutput(bytes.NewReader(data), "fuzz.txt")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.txt") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(o.Rows) == 0 {
			t.Fatal("accepted a file with no rows")
		}
		for i, r := range o.Rows {
			if r.SizeBytes <= 0 || r.Count < 0 || r.Root < -1 {
				t.Fatalf("row %d: %+v", i, r)
			}
			if i > 0 && (r.SizeBytes <= o.Rows[i-1].SizeBytes || r.Line <= o.Rows[i-1].Line) {
				t.Fatalf("row %d not after row %d: %+v, %+v", i, i-1, r, o.Rows[i-1])
			}
			for _, res := range []Result{r.OutOfPlace, r.InPlace} {
				for _, v := range []float64{res.TimeUS, res.AlgBWGBPerS, res.BusBWGBPerS} {
					if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
						t.Fatalf("row %d: figure %v", i, v)
					}
				}
				if res.Wrong < -1 {
					t.Fatalf("row %d: #wrong %d", i, res.Wrong)
				}
			}
		}
		if o.NRanks() < 0 {
			t.Fatalf("rank count %d", o.NRanks())
		}
	})
}
