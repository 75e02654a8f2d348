package sim

import (
	"strings"
	"testing"
)

func validRequest() SearchRequest {
	return SearchRequest{Config: "tp8pp2", Objective: ObjectiveTPS, Top: 3, Full: 0, DecodeSteps: 3, MaxMicrobatches: 4}
}

// Each bad field is refused with an error that starts with its flag.
func TestSearchRequestCheckNamesTheFlag(t *testing.T) {
	if err := validRequest().Check(); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	for _, c := range []struct {
		edit func(*SearchRequest)
		want string
	}{
		{func(r *SearchRequest) { r.Config = "" }, "--config: required"},
		{func(r *SearchRequest) { r.GPUs = -1 }, "--gpus: must be a positive number of GPUs (got -1)"},
		{func(r *SearchRequest) { r.Nodes = -2 }, "--nodes: must be ≥ 1 (got -2)"},
		{func(r *SearchRequest) { r.Top = 0 }, "--top: must be ≥ 1 (got 0)"},
		{func(r *SearchRequest) { r.Full = -2 }, "--full: must be ≥ 0 (got -2)"},
		{func(r *SearchRequest) { r.DecodeSteps = 2 }, "--decode-steps: must be ≥ 3 (got 2)"},
		{func(r *SearchRequest) { r.MaxMicrobatches = 0 }, "--max-microbatches: must be ≥ 1 (got 0)"},
		{func(r *SearchRequest) { r.MaxTPOTms = -1 }, "--max-tpot-ms: must be ≥ 0 (got -1)"},
		{func(r *SearchRequest) { r.MaxTTFTs = -0.5 }, "--max-ttft-s: must be ≥ 0 (got -0.5)"},
		{func(r *SearchRequest) { r.Objective = "speed" }, `--objective: must be one of tps, tpot, ttft (got "speed")`},
	} {
		r := validRequest()
		c.edit(&r)
		if err := r.Check(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", r, err, c.want)
		}
	}
}

// RunSearch on the seed config over its own 16 GPUs: a config it cannot load
// names --config; otherwise the result ranks feasible candidates of 16 GPUs,
// and with Full = -1 the top Top rows are re-run through the timeline.
func TestRunSearchLoadsResolvesAndRefines(t *testing.T) {
	r := validRequest()
	r.Config = "nope"
	if _, _, err := RunSearch(r); err == nil || !strings.HasPrefix(err.Error(), `--config: config "nope"`) {
		t.Errorf("missing config: %v", err)
	}
	r = validRequest()
	r.Full = -1
	var phases []string
	r.Progress = func(p string) func(int, int) { phases = append(phases, p); return nil }
	cfg, res, err := RunSearch(r)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "tp8pp2" || res.Enumerated == 0 || res.Feasible == 0 {
		t.Fatalf("config %q, %d enumerated, %d feasible", cfg.Name, res.Enumerated, res.Feasible)
	}
	if strings.Join(phases, ",") != "search,full timeline" {
		t.Errorf("progress phases %v, want search then full timeline", phases)
	}
	for _, row := range res.Rows[:r.Top] {
		if row.TP*row.PP*row.DP != 16 {
			t.Errorf("%s: tp×pp×dp = %d, want 16", row.Name(), row.TP*row.PP*row.DP)
		}
		if row.Rank > 0 && row.Full == nil {
			t.Errorf("%s: ranked %d of the top %d but not re-run through the timeline", row.Name(), row.Rank, r.Top)
		}
	}
}
