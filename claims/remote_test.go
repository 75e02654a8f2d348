package claims

import (
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/sim"
)

func judgeRemoteFile(t *testing.T, f *File) []Judgement {
	t.Helper()
	in, err := EstimateRemote(f, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := JudgeRemote(f, in)
	if err != nil {
		t.Fatal(err)
	}
	if rest, err := Judge(f, nil); err != nil || len(rest) != 0 {
		t.Fatalf("Judge must leave remote claims to JudgeRemote: %v, %v", rest, err)
	}
	return js
}

func embeddedClaims(t *testing.T, name string) *File {
	t.Helper()
	data, err := fs.ReadFile(configs.Files, "claims/"+name+".toml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(strings.NewReader(string(data)), name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// findJ finds the judgement of metric on line (and mode, ref when given).
func findJ(t *testing.T, js []Judgement, line int, metric, mode, ref string) Judgement {
	t.Helper()
	for _, j := range js {
		if j.Line == line && j.Metric == metric && (mode == "" || j.Mode == mode) && (ref == "" || j.Ref == ref) {
			return j
		}
	}
	t.Fatalf("no judgement of %s (%s/%s) on line %d", metric, mode, ref, line)
	return Judgement{}
}

// TestSeed001: tiny-gpt2 (102,714 parameters: wte 50,257·2 + wpe 1,024·2 +
// 2 layers · 74 + 4) generating 16 tokens after an 8-token prompt.
func TestSeed001(t *testing.T) {
	js := judgeRemoteFile(t, embeddedClaims(t, "seed-001"))
	if len(js) != 13+3+2 { // 13 claims, 3 TPS × latency checks, 2 implied speedups
		t.Fatalf("%d judgements", len(js))
	}
	// "4M params": the model has 102,714, 38.9× fewer.
	if j := findJ(t, js, 64, "params", "", ""); j.Verdict != Inconsistent || j.Model != 102714 {
		t.Errorf("params: %s %g", j.Verdict, j.Model)
	}
	// 2.27× faster than local: a remote mode does local's device work plus
	// the link, so at most 1×; the detail names the host-bound local run:
	// 252.71 ms / 16 tokens = 15.8 ms per token.
	j := findJ(t, js, 147, "remote_speedup", "stateful", "local")
	if j.Verdict != Impossible || j.Bound != 1 || j.Model >= 1 || !strings.Contains(j.Detail, "host-bound") || !strings.Contains(j.Detail, "15.8 ms per token") {
		t.Errorf("2.27×: %s bound %g model %g (%s)", j.Verdict, j.Bound, j.Model, j.Detail)
	}
	// The stated latencies give 252.71 / 110.99 = 2.2769×: the 2.27× follows from them.
	if j := findJ(t, js, 147, "remote_speedup (implied)", "", ""); j.Verdict != Consistent || math.Abs(j.Model-252.71/110.99) > 1e-9 {
		t.Errorf("implied 2.27×: %s %g", j.Verdict, j.Model)
	}
	// "3% improvement": the stated latencies give 116.30 / 110.99 = 1.0478, a
	// 4.78 % gain; 3 % is off by 0.0178, more than 25 % of 0.0478 (0.012).
	if j := findJ(t, js, 148, "remote_speedup (implied)", "", ""); j.Verdict != SelfContra || math.Abs(j.Model-116.30/110.99) > 1e-9 {
		t.Errorf("implied 3%%: %s %g", j.Verdict, j.Model)
	}
	// Stateful bytes of the generation: prefill 8 token ids up (32 B) and one
	// back (4 B); 15 decode steps of 4 B each way: 36 + 120 = 156 B.
	if j := findJ(t, js, 145, "remote_bytes", "stateful", ""); j.Verdict != Inconsistent || j.Model != 156 {
		t.Errorf("stateful bytes: %s %g", j.Verdict, j.Model)
	}
	// kv mode: 32 B of KV per token (2 layers × k,v × 2 heads × 1 × 4 B).
	// Prefill: 32 B of ids up, 8 × 32 + 4 B down = 292 B. Step s (0..14): up
	// (8+s)·32 + 4, down (9+s)·32 + 4; Σ = 32·(15·17 + 2·105) + 120 = 15,000 B.
	// 15,292 B in all, against the claimed 6.14 MB.
	if j := findJ(t, js, 144, "remote_bytes", "kv", ""); j.Verdict != Inconsistent || j.Model != 15292 {
		t.Errorf("kv bytes: %s %g", j.Verdict, j.Model)
	}
	// The same 6.14 MB with and without semantics (1×), where the model has
	// kv / stateful = 15,292 / 156 = 98.03×.
	if j := findJ(t, js, 145, "remote_traffic_reduction", "stateful", "kv"); j.Verdict != Inconsistent || math.Abs(j.Model-15292.0/156) > 1e-9 {
		t.Errorf("traffic 1×: %s %g", j.Verdict, j.Model)
	}
	// Local moves 0 network bytes; the claimed 610 B is not the model's.
	if j := findJ(t, js, 143, "remote_bytes", "local", ""); j.Verdict != Inconsistent || j.Model != 0 {
		t.Errorf("local bytes: %s %g", j.Verdict, j.Model)
	}
	// 63.32 tok/s × 0.25271 s = 16.0016 tokens: the 16 generated.
	if j := findJ(t, js, 143, "remote_tokens_per_s × remote_latency_s", "local", ""); j.Verdict != Consistent || math.Abs(j.Value-63.32*0.25271) > 1e-9 {
		t.Errorf("local tps×latency: %s %g", j.Verdict, j.Value)
	}
	// 252.71 ms: the model's local generation is 16 passes at ≈2.15 ms (the
	// A100's 2 ms per-pass host cost plus kernels), ≈34 ms; 7.3× below the claim.
	if j := findJ(t, js, 143, "remote_latency_s", "local", ""); j.Verdict != Inconsistent || j.Ratio < 5 || j.Ratio > 10 {
		t.Errorf("local latency: %s ratio %g", j.Verdict, j.Ratio)
	}
}

// TestSeed000: the seed's stated directions hold in the model; its "~3MB"
// is 7.3× the weights (102,714 × 4 B = 410,856 B).
func TestSeed000(t *testing.T) {
	js := judgeRemoteFile(t, embeddedClaims(t, "seed-000"))
	if len(js) != 5 {
		t.Fatalf("%d judgements", len(js))
	}
	if j := findJ(t, js, 151, "weight_bytes", "", ""); j.Verdict != Inconsistent || j.Model != 410856 {
		t.Errorf("weights: %s %g", j.Verdict, j.Model)
	}
	if j := findJ(t, js, 95, "remote_bytes", "local", ""); j.Verdict != Consistent || j.Model != 0 {
		t.Errorf("local 0 B: %s %g", j.Verdict, j.Model)
	}
	// Naive: 16 requests × 410,856 B of weight tensors (partition.RemoteWeights
	// ships the shard's own tensors; the tied LM head is rebuilt on the
	// server) = 6,573,696 B, plus kv mode's 15,292 B of KV and ids:
	// 6,588,988 B, against stateful's 156 B.
	if j := findJ(t, js, 101, "remote_traffic_reduction", "stateful", "naive"); j.Verdict != Consistent || math.Abs(j.Model-6588988.0/156) > 1e-6 {
		t.Errorf("naive bytes: %s %g", j.Verdict, j.Model)
	}
	// Naive's 6.59 MB over loopback (3.9 GB/s) adds ≈1.69 ms to ≈34.5 ms:
	// 1 + 1.69/34.5 ≈ 1.049×.
	for _, m := range []string{"remote_speedup", "remote_gpu_util_ratio"} {
		if j := findJ(t, js, 102, m, "stateful", "naive"); j.Verdict != Consistent || j.Model < 1.04 || j.Model > 1.06 {
			t.Errorf("%s: %s %g", m, j.Verdict, j.Model)
		}
	}
}

// TestSeed003: every expected range misses the model; the ranges agree with
// each other.
func TestSeed003(t *testing.T) {
	js := judgeRemoteFile(t, embeddedClaims(t, "seed-003"))
	if len(js) != 12+4 {
		t.Fatalf("%d judgements", len(js))
	}
	for _, j := range js {
		want := Inconsistent
		if strings.HasSuffix(j.Metric, "(implied)") {
			// e.g. decode, full: 0.7–0.9 ÷ 0.1–0.3 = 2.33–9×, overlapping 3–5×.
			want = Consistent
		}
		if j.Verdict != want {
			t.Errorf("line %d %s %s/%s: %s, want %s (%s)", j.Line, j.Metric, j.Mode, j.Ref, j.Verdict, want, j.Detail)
		}
	}
	// Stateful adds 8 B and two 2 µs latencies to an ≈11 ms decode step: ≈1×
	// local, above the claimed 0.7–0.9×.
	if j := findJ(t, js, 211, "remote_speedup", "stateful", "local"); j.Model < 0.99 || j.Model > 1 {
		t.Errorf("decode full vs local: %g", j.Model)
	}
	// Per decode step naive ships at least the fp32 weights (1,557,611,200 × 4 B);
	// stateful 4 B of id each way: a reduction above 7.7e8, not 10–15×.
	if j := findJ(t, js, 239, "remote_traffic_reduction", "stateful", "naive"); j.Model < 1_557_611_200*4/8 {
		t.Errorf("decode traffic reduction: %g", j.Model)
	}
}

// TestRemoteCrossChecksCanFail: a vs-naive range its vs-local ranges cannot
// give (0.9–1 ÷ 0.5–0.6 = 1.5–2×, not 5–6×) and a TPS that does not match
// the latency (10 tok/s × 0.1 s = 1 token of 16).
func TestRemoteCrossChecksCanFail(t *testing.T) {
	in := `version = 1
[strategies]
baseline = "tiny-gpt2-a100"
[[claim]]
metric = "remote_speedup"
strategy = "baseline"
phase = "decode"
mode = "stateful"
ref = "local"
min = 0.9
max = 1.0
line = 1
[[claim]]
metric = "remote_speedup"
strategy = "baseline"
phase = "decode"
mode = "naive"
ref = "local"
min = 0.5
max = 0.6
line = 2
[[claim]]
metric = "remote_speedup"
strategy = "baseline"
phase = "decode"
mode = "stateful"
ref = "naive"
min = 5
max = 6
line = 3
[[claim]]
metric = "remote_tokens_per_s"
strategy = "baseline"
mode = "local"
value = 10
line = 4
[[claim]]
metric = "remote_latency_s"
strategy = "baseline"
mode = "local"
value = 0.1
line = 4
`
	f, err := Parse(strings.NewReader(in), "x.toml")
	if err != nil {
		t.Fatal(err)
	}
	js := judgeRemoteFile(t, f)
	if j := findJ(t, js, 3, "remote_speedup (implied)", "", ""); j.Verdict != SelfContra || math.Abs(j.Model-(1.5+2)/2) > 1e-12 {
		t.Errorf("range: %s %g (%s)", j.Verdict, j.Model, j.Detail)
	}
	if j := findJ(t, js, 4, "remote_tokens_per_s × remote_latency_s", "", ""); j.Verdict != SelfContra || j.Value != 1 {
		t.Errorf("tps×latency: %s %g", j.Verdict, j.Value)
	}
	// 0.9–1× of local in a decode step is possible (the bound is 1) and
	// holds the model's ≈1×.
	if j := findJ(t, js, 1, "remote_speedup", "stateful", "local"); j.Verdict != Consistent {
		t.Errorf("0.9–1×: %s (%s)", j.Verdict, j.Detail)
	}
}

func TestRemoteParseErrors(t *testing.T) {
	head := "version = 1\n[strategies]\nbaseline = \"tiny-gpt2-a100\"\n[[claim]]\nstrategy = \"baseline\"\n"
	for _, tc := range []struct{ in, want string }{
		{"metric = \"remote_bytes\"\nmode = \"fast\"", `claim[0].mode: remote mode "fast"`},
		{"metric = \"remote_speedup\"\nmode = \"kv\"", "claim[0].ref: metric remote_speedup is a ratio"},
		{"metric = \"remote_speedup\"\nmode = \"kv\"\nref = \"kv\"", `claim[0].ref: must differ from mode "kv"`},
		{"metric = \"remote_bytes\"\nmode = \"kv\"\nphase = \"train\"", `claim[0].phase: must be prefill, decode or empty`},
		{"metric = \"remote_tokens_per_s\"\nmode = \"kv\"\nphase = \"decode\"", "claim[0].phase: tokens per second"},
		{"metric = \"remote_bytes\"\nmode = \"kv\"\nmin = 3\nmax = 2", "claim[0].max: must be finite and at least min 3"},
		{"metric = \"remote_bytes\"\nmode = \"kv\"\nmax = 2", "claim[0].max: a range needs min"},
		{"metric = \"remote_traffic_reduction\"\nmode = \"local\"\nref = \"naive\"", "claim[0].mode: local moves no bytes"},
		{"metric = \"tpot_s\"\nmode = \"kv\"", "claim[0].mode: metric tpot_s takes no mode"},
	} {
		_, err := Parse(strings.NewReader(head+tc.in), "x.toml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := Parse(strings.NewReader("version = 1\nlink = \"carrier-pigeon\"\n[strategies]\nbaseline = \"x\""), "x.toml"); err == nil || !strings.Contains(err.Error(), "x.toml: link \"carrier-pigeon\": not a link preset") {
		t.Errorf("link: %v", err)
	}
}
