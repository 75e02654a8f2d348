package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
)

// remoteResults is a results.json of two trials per mode with hand-picked
// numbers: decode of 3 requests per trial; naive ships 3 × 1,000,000 B,
// stateful 3 × 32 B, local nothing.
func remoteResults(t *testing.T, naiveDecodeS float64) []byte {
	t.Helper()
	tr := &remote.Trials{Config: "single-tiny"}
	for trial := 0; trial < 2; trial++ {
		for _, r := range []remote.Row{
			{Mode: partition.RemoteLocal, Phase: partition.Prefill, Requests: 1, LatencyS: 0.008},
			{Mode: partition.RemoteLocal, Phase: partition.Decode, Requests: 3, LatencyS: 0.003},
			{Mode: partition.RemoteNaive, Phase: partition.Prefill, Requests: 1, LatencyS: 0.012, NetBytes: 1_400_000, WantBytes: 1_400_000},
			{Mode: partition.RemoteNaive, Phase: partition.Decode, Requests: 3, LatencyS: naiveDecodeS, NetBytes: 3_000_000, WantBytes: 3_000_000},
			{Mode: partition.RemoteStateful, Phase: partition.Prefill, Requests: 1, LatencyS: 0.009, NetBytes: 336, WantBytes: 336},
			{Mode: partition.RemoteStateful, Phase: partition.Decode, Requests: 3, LatencyS: 0.0025, NetBytes: 96, WantBytes: 96},
		} {
			r.Trial = trial
			tr.Rows = append(tr.Rows, r)
		}
	}
	f := remote.NewResultsFile(tr)
	f.Transport, f.Server = "grpc", "127.0.0.1:1"
	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestRemoteResultsCompareAndPlot: compare and plot read results.json by
// its schema: records per mode and phase, the gap ratio
// (naive / stateful decode: 3,000,000 / 96 = 31,250× the bytes;
// 0.010 / 0.0025 = 4× the latency), and a figure of both panels.
func TestRemoteResultsCompareAndPlot(t *testing.T) {
	a, err := ReadDoc(bytes.NewReader(remoteResults(t, 0.010)), "a.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadDoc(bytes.NewReader(remoteResults(t, 0.015)), "b.json")
	if err != nil {
		t.Fatal(err)
	}
	if a.Remote == nil || a.Schema != RemoteSchema {
		t.Fatalf("schema %q not read as a remote result", a.Schema)
	}
	c, err := Compare([]*Doc{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{ // key/metric → value in a; b's naive decode latency is 1.5×
		"naive decode/net_bytes_per_request":      1_000_000,
		"stateful decode/net_bytes_per_trial":     96,
		"naive decode/latency_per_request_s":      0.010 / 3,
		"naive/stateful decode/gap_bytes_ratio":   31_250,
		"naive/stateful decode/gap_latency_ratio": 4,
	}
	found := 0
	for _, r := range c.Rows {
		v, ok := want[r.Key+"/"+r.Metric]
		if !ok {
			continue
		}
		found++
		if got := *r.Values[0]; abs(got-v) > 1e-9*v {
			t.Errorf("%s %s = %g, want %g", r.Key, r.Metric, got, v)
		}
		if r.Key == "naive decode" && r.Metric == "latency_per_request_s" && (r.RelDiff[1] == nil || abs(*r.RelDiff[1]-0.5) > 1e-9) {
			t.Errorf("naive decode latency: relative difference %v, want +50 %%", r.RelDiff[1])
		}
	}
	if found != len(want) {
		t.Errorf("found %d of %d expected records in the comparison", found, len(want))
	}
	fig, err := DocFigure(a, "a.json", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(fig.Panels) != 2 {
		t.Fatalf("%d panels, want bytes and latency", len(fig.Panels))
	}
	var svg bytes.Buffer
	if err := fig.Write(&svg, "svg"); err != nil {
		t.Fatal(err)
	}
	// 31,250 and 4 in engineering notation.
	for _, s := range []string{"payload per request (B, log)", "31.2K× bytes, 4× latency", "no bytes: local", "mean latency per request (ms)"} {
		if !strings.Contains(svg.String(), s) {
			t.Errorf("the figure lacks %q", s)
		}
	}
	var png bytes.Buffer
	if err := fig.Write(&png, "png"); err != nil || png.Len() < 1000 {
		t.Errorf("png: %d B, %v", png.Len(), err)
	}
	if _, err := DocFigure(a, "a.json", PlotSweep, 0); err == nil || !strings.Contains(err.Error(), "sweep needs") {
		t.Errorf("--kind sweep on a remote result: %v", err)
	}
	if _, err := ReadDoc(strings.NewReader(`{"schema":"`+RemoteSchema+`","aggregates":[]}`), "empty.json"); err == nil || !strings.Contains(err.Error(), "no aggregates") {
		t.Errorf("an empty remote result: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
