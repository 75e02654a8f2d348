package sim

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseMeasured drives any bytes through the measured-results parsers:
// an error or points whose every figure is finite and not negative, with a
// batch, input and output that are 0 (the config's) or at least 1 — never a
// panic. Seeds are the fixtures. Run: go test ./sim -run NONE -fuzz FuzzParseMeasured.
func FuzzParseMeasured(f *testing.F) {
	files, _ := filepath.Glob("testdata/measured/*")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pts, err := ParseMeasured(data, "fuzz")
		if err != nil {
			return
		}
		if len(pts) == 0 {
			t.Fatal("no error and no point")
		}
		for _, p := range pts {
			for _, v := range []float64{p.TTFTS, p.TPOTS, p.E2ES, p.TokensPerS, p.TokensTotal} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("point %+v: a figure is not finite and ≥ 0", p)
				}
			}
			if p.Batch < 0 || p.Input < 0 || p.Output < 0 || p.Requests < 0 {
				t.Fatalf("point %+v: negative count", p)
			}
		}
	})
}
