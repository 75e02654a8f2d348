package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

func singleTiny(t *testing.T) *partition.Plan {
	t.Helper()
	c, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	p, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-9*math.Abs(b) }

// Hand derivation on test/single-tiny (bytes from partition's remote test:
// weights 1,233,152 B, KV 8,192 B per cached token, ids 16 B per decode
// step, 320 B per prefill) over a link of 1e9 B/s and 10 µs, 100 µs overhead
// per request, compute 1 ms prefill and 200 µs per decode step. Output 4 →
// 3 decode steps; the representative step is 4/2 = 2 (past 22).
//
//	naive decode 2: up 1,233,152 + 180,224 + 16 = 1,413,392; down 188,416 + 16 = 188,432
//	  1,601,824 B / 1e9 = 1.601824 ms + 2 × 10 µs + 100 µs + 200 µs = 1.921824 ms
//	kv decode 2: up 180,240, down 188,432 → 368,672 B: 0.368672 + 0.32 = 0.688672 ms
//	  open: 1,233,152 B / 1e9 + 10 µs + 100 µs = 1.343152 ms
//	stateful decode 2: 32 B → 32 ns + 320 µs = 0.320032 ms
//	local decode: 0.2 ms
//	naive prefill: up 1,233,472, down 163,856 → 1,397,328 B: 1.397328 + 0.02 + 0.1 + 1 = 2.517328 ms
//	gap: bytes 1,601,824 / 32 = 50,057; latency 1.921824 / 0.320032 = 6.005099…
//	generation bytes: naive 1,397,328 + 1,569,056 + 1,585,440 + 1,601,824 = 6,153,648
//	                  kv 1,233,152 + 164,176 + 335,904 + 352,288 + 368,672 = 2,454,192
//	                  stateful 336 + 3 × 32 = 432; local 0
func TestPriceRemote(t *testing.T) {
	p := singleTiny(t)
	link, err := topology.ParseClientLink("link", "bytes_per_s=1e9,latency_s=10e-6")
	if err != nil {
		t.Fatal(err)
	}
	e, err := PriceRemote(p, RemoteCompute{PrefillS: 1e-3, DecodeStepS: 200e-6}, RemoteOptions{Link: link, RequestOverheadS: 100e-6})
	if err != nil {
		t.Fatal(err)
	}
	if e.DecodeStep != 2 {
		t.Fatalf("representative step %d, want 2", e.DecodeStep)
	}
	for _, tc := range []struct {
		mode              partition.RemoteMode
		decodeS, prefillS float64
		decodeBytes       int64
		openS             float64
		genBytes          int64
	}{
		{partition.RemoteLocal, 200e-6, 1e-3, 0, 0, 0},
		{partition.RemoteNaive, 1.921824e-3, 2.517328e-3, 1_601_824, 0, 6_153_648},
		{partition.RemoteKV, 0.688672e-3, 0, 368_672, 1.343152e-3, 2_454_192},
		{partition.RemoteStateful, 0.320032e-3, 0, 32, 0, 432},
	} {
		m := e.Mode(tc.mode)
		if !near(m.Decode.TotalS, tc.decodeS) || m.Decode.Bytes.Total() != tc.decodeBytes || !near(m.OpenS, tc.openS) || m.GenerationBytes != tc.genBytes {
			t.Errorf("%s: decode %.9g s %d B, open %.9g s, generation %d B; want %.9g s %d B, %.9g s, %d B",
				tc.mode, m.Decode.TotalS, m.Decode.Bytes.Total(), m.OpenS, m.GenerationBytes, tc.decodeS, tc.decodeBytes, tc.openS, tc.genBytes)
		}
		if tc.prefillS > 0 && !near(m.Prefill.TotalS, tc.prefillS) {
			t.Errorf("%s prefill %.9g s, want %.9g", tc.mode, m.Prefill.TotalS, tc.prefillS)
		}
	}
	if e.GapBytesRatio != 50_057 || !near(e.GapLatencyRatio, 1.921824/0.320032) {
		t.Errorf("gap ratios %g bytes, %g latency; want 50057 and %g", e.GapBytesRatio, e.GapLatencyRatio, 1.921824/0.320032)
	}
}

func TestEstimateRemoteUsesModeledCompute(t *testing.T) {
	p := singleTiny(t)
	e, err := EstimateRemote(p, RemoteOptions{Link: topology.ClientLinks["25gbe"]}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	est, err := EstimatePlan(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Local mode is the compute alone: the single-rank estimate's TTFT and TPOT.
	local := e.Mode(partition.RemoteLocal)
	if local.Prefill.TotalS != est.Prefill.TTFTS || local.Decode.TotalS != est.Decode.TPOTS || est.Decode.TPOTS <= 0 {
		t.Errorf("local prefill %g decode %g; estimate TTFT %g TPOT %g", local.Prefill.TotalS, local.Decode.TotalS, est.Prefill.TTFTS, est.Decode.TPOTS)
	}
	// Ordering the issue requires: naive > kv > stateful > local in bytes and time per decode step.
	n, k, s := e.Mode(partition.RemoteNaive).Decode, e.Mode(partition.RemoteKV).Decode, e.Mode(partition.RemoteStateful).Decode
	if !(n.TotalS > k.TotalS && k.TotalS > s.TotalS && s.TotalS > local.Decode.TotalS) || !(n.Bytes.Total() > k.Bytes.Total() && k.Bytes.Total() > s.Bytes.Total()) {
		t.Errorf("ordering: naive %g/%d kv %g/%d stateful %g/%d local %g", n.TotalS, n.Bytes.Total(), k.TotalS, k.Bytes.Total(), s.TotalS, s.Bytes.Total(), local.Decode.TotalS)
	}
}

func TestPriceRemoteErrors(t *testing.T) {
	p := singleTiny(t)
	if _, err := PriceRemote(p, RemoteCompute{}, RemoteOptions{Link: topology.ClientLink{Name: "x"}}); err == nil || !strings.Contains(err.Error(), "bytes_per_s") {
		t.Errorf("zero-bandwidth link: %v", err)
	}
	if _, err := PriceRemote(p, RemoteCompute{}, RemoteOptions{Link: topology.ClientLinks["10gbe"], RequestOverheadS: -1}); err == nil || !strings.Contains(err.Error(), "overhead") {
		t.Errorf("negative overhead: %v", err)
	}
	c, _ := configs.Load("test/tp4-tiny")
	multi, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EstimateRemote(multi, RemoteOptions{Link: topology.ClientLinks["10gbe"]}, Options{}); err == nil || !strings.Contains(err.Error(), "single-rank") {
		t.Errorf("multi-rank plan: %v", err)
	}
}
