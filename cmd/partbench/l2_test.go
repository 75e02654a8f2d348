package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/partbench/partbench/compare"
)

func TestL2CommandJSON(t *testing.T) {
	out, err := runCLI(t, "l2", "--config", "test/tp2pp2-tiny", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Strategies []compare.L2Strategy `json:"strategies"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Strategies) != 1 || len(doc.Strategies[0].Ranks) != 4 {
		t.Fatalf("strategies %+v", doc.Strategies)
	}
	// Stage 0 re-reads 4 layers × (wqkv 64·64 + wo 32·64 + w_up 64·128 +
	// w_down 64·64 + two norms of 64) × 4 B = 4 × 18560 × 4 = 296 960 B;
	// stage 1 also the LM head (64·48) and the final norm (64):
	// 296 960 + (3072 + 64) × 4 = 309 504 B. Both fit the H100's 50 MiB L2.
	s := doc.Strategies[0]
	for _, r := range s.Ranks {
		want := int64(296960)
		if r.Stage == 1 {
			want = 309504
		}
		if r.WorkingSetBytes != want || r.ModeledResidency != 1 || r.Measured != nil {
			t.Errorf("rank %d: working set %d (want %d), residency %g, measured %v", r.Rank, r.WorkingSetBytes, want, r.ModeledResidency, r.Measured)
		}
	}
	if s.L2.WorkingSetBytes != 309504 || s.L2.WeightResidency != 1 || s.L2.WholeLayerResidency != 1 {
		t.Errorf("L2 %+v", s.L2)
	}
}

func TestL2CommandCalibratedTable(t *testing.T) {
	cal := writeTestCalibration(t, cpuLikeCalibration())
	out, err := runCLI(t, "l2", "--config", "tp8pp2", "--calibration", cal)
	if err != nil {
		t.Fatal(err)
	}
	// 32 MiB usable against the seed's 537.0 MB per rank: 33.554 / 537.002 = 6.2 %.
	for _, want := range []string{"cpu:test", "33.554", "537.002", "6.2", "measured 4 ranks, the config has 16"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
