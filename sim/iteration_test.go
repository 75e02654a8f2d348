package sim

import (
	"testing"

	"github.com/partbench/partbench/partition"
)

// decodeShape is one micro-batch of the plan's decode Program as an
// iteration: MicrobatchSize sequences, one new token each after DecodePast
// cached ones, every one sampling.
func decodeShape(p *partition.Plan) IterationShape {
	var sh IterationShape
	for i := 0; i < p.MicrobatchSize; i++ {
		sh.Add(1, p.DecodePast(), true)
	}
	return sh
}

// An iteration shaped like one micro-batch of the plan's decode step costs
// what the closed-form estimate charges for that micro-batch's trip through
// every stage and link (QuickEstimate.RoundTripS): the same ops, rescaled to
// the same rows, priced by the same functions. The tolerance is float
// rounding only.
func TestIterationMatchesQuickDecodeTrip(t *testing.T) {
	for _, name := range []string{"tp8pp2", "layerwise16", "test/tp2pp2-tiny", "../serving/testdata/llama2-7b-h100.toml"} {
		p := seedPlan(t, name)
		q, err := Quick(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewIterationModel(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.TimeS(decodeShape(p))
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(got, q.RoundTripS); e > 1e-9 {
			t.Errorf("%s: iteration %.6g s, quick round trip %.6g s (error %.2g)", name, got, q.RoundTripS, e)
		}
	}
}

// A whole-prompt prefill of one sequence on one GPU costs the plan's TTFT,
// but for the weights' first touch (an engine's iterations find them where
// the previous one left them): on Llama-2-7B the reused weights are 6.5 GB
// against 50 MiB of L2, so the two differ by under 0.1 %.
func TestIterationPrefillNearTTFT(t *testing.T) {
	p := seedPlan(t, "../serving/testdata/llama2-7b-h100.toml")
	q, err := Quick(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewIterationModel(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sh IterationShape
	sh.Add(p.Config.Workload.PromptTokens(), 0, true)
	got, err := m.TimeS(sh)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(got, q.TTFTS); e > 1e-3 {
		t.Errorf("prefill iteration %.6g s, TTFT %.6g s (error %.2g)", got, q.TTFTS, e)
	}
}

// Attention is priced over each sequence's own context: two sequences at
// 100 and 3,000 cached tokens cost what two at their mean 1,550 cost (the
// pairs and cached bytes are linear in past), and more than two at 100.
func TestIterationAttentionPerSequence(t *testing.T) {
	p := seedPlan(t, "../serving/testdata/llama2-7b-h100.toml")
	m, err := NewIterationModel(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	time := func(pasts ...int) float64 {
		var sh IterationShape
		for _, x := range pasts {
			sh.Add(1, x, true)
		}
		s, err := m.TimeS(sh)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mixed, mean, short := time(100, 3000), time(1550, 1550), time(100, 100)
	if relErr(mixed, mean) > 1e-12 {
		t.Errorf("pasts 100+3000: %.9g s, 1550+1550: %.9g s; want equal", mixed, mean)
	}
	if !(mixed > short) {
		t.Errorf("pasts 100+3000: %.9g s, not above 100+100: %.9g s", mixed, short)
	}
	if _, err := m.TimeS(IterationShape{}); err == nil {
		t.Error("an empty iteration was priced")
	}
}

// On a pipeline, each stage's time is its own: tp8pp2's two stages hold 8
// layers each, so their times differ only by the first stage's embedding
// and the last's LM head; they sum to TimeS.
func TestIterationStageTimes(t *testing.T) {
	p := seedPlan(t, "tp8pp2")
	m, err := NewIterationModel(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sh := decodeShape(p)
	ts, err := m.StageTimesS(sh, nil)
	if err != nil {
		t.Fatal(err)
	}
	total, err := m.TimeS(sh)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || m.Stages() != 2 || relErr(ts[0]+ts[1], total) > 1e-12 {
		t.Fatalf("stage times %v, total %g", ts, total)
	}
	if relErr(ts[0], ts[1]) > 0.5 || ts[0] <= 0 {
		t.Errorf("stage times %v: not two alike halves", ts)
	}
}

// Swapping KV entries costs their bytes over the host link: Llama-2-7B
// holds 32 × 2 × 4,096 × 2 B = 524,288 B per token, so 1,000 tokens are
// 524,288,000 B over PCIe Gen5 x16, plus one link latency.
func TestIterationSwapCost(t *testing.T) {
	p := seedPlan(t, "../serving/testdata/llama2-7b-h100.toml")
	m, err := NewIterationModel(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sh := decodeShape(p)
	base, err := m.TimeS(sh)
	if err != nil {
		t.Fatal(err)
	}
	sh.SwapTokens = 1000
	with, err := m.TimeS(sh)
	if err != nil {
		t.Fatal(err)
	}
	host := Gen5HostLink()
	if want := 524_288_000/host.BytesPerS + host.LatencyS; relErr(with-base, want) > 1e-9 {
		t.Errorf("swap of 1000 tokens adds %.6g s, want %.6g s", with-base, want)
	}
}

// The rescaled template prices exactly what partition builds for the same
// shape: for one sequence of q new tokens after past cached ones, summing
// the cost of every op of partition.Plan.Pass (all layers, built for that
// shape) gives the iteration model's time. This holds the per-row scaling
// and the attention pair count to partition's own arithmetic.
func TestIterationMatchesPassOps(t *testing.T) {
	for _, name := range []string{"../serving/testdata/llama2-7b-h100.toml", "test/tp4-tiny", "test/single-tiny"} {
		p := seedPlan(t, name)
		m, err := NewIterationModel(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ q, past int }{{1, 100}, {7, 0}, {16, 5}, {3, 40}} {
			var sh IterationShape
			sh.Add(tc.q, tc.past, true)
			got, err := m.TimeS(sh)
			if err != nil {
				t.Fatal(err)
			}
			phase := partition.Decode
			if tc.q > 1 {
				phase = partition.Prefill
			}
			var want float64
			ops := p.Pass(0, phase, 0, 1, tc.q, tc.past, true)
			for i := range ops {
				x, err := m.opS(&ops[i], m.stages[0].res, phase)
				if err != nil {
					t.Fatal(err)
				}
				want += x
			}
			if relErr(got, want) > 1e-12 {
				t.Errorf("%s q=%d past=%d: iteration %.9g s, Pass ops %.9g s", name, tc.q, tc.past, got, want)
			}
		}
	}
}
