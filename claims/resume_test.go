package claims

import (
	"bytes"
	"io/fs"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// TestSeed002: the seed's figures against the modeled resume of
// llama2-13b-2k. Recompute at layer 1 (2.1 ms) is within 25 % of the model
// and above the compute floor; offload's 0.8 ms is above the PCIe floor
// (2048·5120·2 B / 63 GB/s ≈ 0.33 ms), so possible but 2.4× it, not "the
// speed of light"; the projection contradicts the document's own numbers:
// 35 − 20 + 2 = 17 ms, not 10.
func TestSeed002(t *testing.T) {
	data, err := fs.ReadFile(configs.Files, "claims/seed-002.toml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(bytes.NewReader(data), "seed-002")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(f.Strategies["baseline"])
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	link, _ := topology.ParseClientLink("link", "loopback")
	e, err := sim.EstimateResume(plan, sim.ResumeOptions{Layers: ResumeLayers(f), Client: link}, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := JudgeResume(f, e)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, j := range js {
		got[j.Metric+"@"+string(rune('0'+j.Layer/10))+string(rune('0'+j.Layer%10))] = j.Verdict
	}
	for key, want := range map[string]string{
		"resume_recompute_s@01":           Consistent,
		"resume_offload_s@01":             Inconsistent,
		"resume_activation_bytes@01":      Inconsistent,
		"resume_projected_s (implied)@00": SelfContra,
	} {
		if got[key] != want {
			t.Errorf("%s: %q, want %q", key, got[key], want)
		}
	}
	if est, err := Judge(f, nil); err != nil || len(est) != 0 {
		t.Errorf("Judge must leave resume claims to JudgeResume: %v, %v", est, err)
	}
}
