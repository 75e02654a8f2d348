package remote

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
)

// TestRunTrials runs every mode twice after a warm-up through a real server
// and checks what the results files say: bytes per decode trial ordered
// naive > kv > stateful > local = 0 and equal to the model, tokens the same,
// one CSV row per recorded trial and phase.
func TestRunTrials(t *testing.T) {
	cfg, _ := testConfig(t, "test/single-tiny")
	eng := server.NewCPUEngine()
	_, addrs := startServer(t, server.ServerConfig{}, eng)
	c := dial(t, addrs["grpc"], "grpc", "")
	tr, err := RunTrials(ctx(t), TrialOptions{Config: cfg, Modes: partition.RemoteModes, Trials: 2, Warmup: 1, Client: c, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Mismatches) > 0 {
		t.Fatalf("payload bytes differ from the model: %v", tr.Mismatches)
	}
	for _, m := range partition.RemoteModes {
		if !slices.EqualFunc(tr.Tokens[m], tr.Tokens[partition.RemoteLocal], slices.Equal) {
			t.Errorf("%s tokens %v, local %v", m, tr.Tokens[m], tr.Tokens[partition.RemoteLocal])
		}
	}
	decode := map[partition.RemoteMode]int64{}
	for _, a := range tr.Aggregates() {
		if a.Phase == partition.Decode {
			decode[a.Mode] = a.NetBytes
		}
		if a.Trials != 2 {
			t.Errorf("%s %s: %d trials recorded, want 2 (the warm-up is not)", a.Mode, a.Phase, a.Trials)
		}
		// Latency is positive: its interval is on the log scale and stays
		// above 0 around the mean; utilization stays inside [0, 1].
		if l := a.LatencyS; l.N != 2 || l.CIScale != "log" || !(0 < l.CILow && l.CILow <= l.Mean && l.Mean <= l.CIHigh) {
			t.Errorf("%s %s latency: %+v, want 2 samples and a log-scale interval in (0, ∞) around the mean", a.Mode, a.Phase, l)
		}
		if u := a.AvgSM; u.CIScale != "logit[0,1]" || u.CILow < 0 || u.CIHigh > 1 {
			t.Errorf("%s %s avg_sm: %+v, want its interval inside [0, 1]", a.Mode, a.Phase, u)
		}
	}
	// Hand check, single-tiny: 8 layers, kv width 2·4·8 = 64 floats = 256 B per
	// token, batch 4; prompt = context 24 − output_tokens 4 = 20, and 3 decode
	// steps see 20, 21, 22 cached positions and return 21, 22, 23. kv mode
	// per decode trial: up 4·256·8·(20+21+22) + 3 × 4 ids × 4 B, down
	// 4·256·8·(21+22+23) + 3 × 16.
	wantKV := int64(4*256*8*(20+21+22)+3*16) + int64(4*256*8*(21+22+23)+3*16)
	if decode[partition.RemoteKV] != wantKV {
		t.Errorf("kv decode bytes %d, hand count %d", decode[partition.RemoteKV], wantKV)
	}
	if !(decode[partition.RemoteNaive] > decode[partition.RemoteKV] && decode[partition.RemoteKV] > decode[partition.RemoteStateful] &&
		decode[partition.RemoteStateful] > 0 && decode[partition.RemoteLocal] == 0) {
		t.Errorf("decode bytes per trial %v: want naive > kv > stateful > local = 0", decode)
	}
	if decode[partition.RemoteStateful] != 3*(16+16) {
		t.Errorf("stateful decode bytes %d, want 3 steps × (4 ids up + 4 ids down) × 4 B = 96", decode[partition.RemoteStateful])
	}
	dir := t.TempDir()
	f := NewResultsFile(tr)
	if err := f.Write(dir); err != nil {
		t.Fatal(err)
	}
	cf, err := os.Open(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	recs, err := csv.NewReader(cf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 4 modes × 2 phases × 2 trials + kv's load row × 2 trials, plus the header.
	if len(recs) != 1+4*2*2+2 {
		t.Errorf("results.csv has %d records, want 1 + 18", len(recs))
	}
	if !slices.Equal(recs[0][:7], []string{"trial", "phase", "mode", "latency_s", "wall_s", "net_bytes", "avg_sm"}) {
		t.Errorf("results.csv header %v", recs[0])
	}
	var back ResultsFile
	js, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.GapBytesRatio <= 1 || back.Schema != ResultsSchema {
		t.Errorf("results.json: schema %q, gap bytes ratio %v (naive/stateful must exceed 1)", back.Schema, back.GapBytesRatio)
	}
}
