package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// The thirteenth gpu-check call's calibration of the six tiny test configs
// on an H200 (docs/measurements/gpu-check-h200-2026-11-27), written before
// host_op_s existed: its op-time table prices every op of single-tiny.
const h200Call13Tiny = "../docs/measurements/gpu-check-h200-2026-11-27/thirteenth-call-agreement/calib-tiny.toml"

// singleTinyOnH200 prices single-tiny under that calibration with
// host_op_s h and cuda_graphs graphs.
func singleTinyOnH200(t *testing.T, h float64, graphs bool) (*Estimate, QuickEstimate) {
	t.Helper()
	cal, err := configs.LoadCalibration(h200Call13Tiny)
	if err != nil {
		t.Fatal(err)
	}
	if cal.Hardware.HostOpS != 0 {
		t.Fatalf("host_op_s %g, want 0 (written before it)", cal.Hardware.HostOpS)
	}
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cal.Hardware.HostOpS, cal.Hardware.CUDAGraphs = h, graphs
	cal.Apply(cfg)
	e, err := EstimateConfig(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Quick(e.Plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e, q
}

// An eager pass runs at the host's pace where its ops are shorter than
// the host's time to queue one: with host_op_s h = 1 ms, far above every
// op of single-tiny (µs on the H200), the host queues the pass's i-th
// compute op (from 1) at i·h after the pass's start and the device waits
// for it, so the prefill (n compute ops, one rank, no communication) ends
// at n·h plus the last op's own time — TTFT = n·h + t_last, t_last the
// sample op's time without the host (the same estimate at h = 0) — and
// each op's slice is its wait, h less its predecessor's own time, and its
// own time (each as at h = 0). The decode step, one CUDA graph, is not
// paced: TPOT as at h = 0. Without graphs each decode step is paced alike:
// TPOT = n_dec·h + t_last_dec. The wait is part of the op's slice, as a
// launch cost is: one rank with no communication is busy all the time
// either way, so its decode busy time scales as TPOT does. The quick
// estimate charges each paced op max(t, h) = h: prefill n·h.
func TestHostPacesAnEagerPass(t *testing.T) {
	const h = 1e-3
	base, _ := singleTinyOnH200(t, 0, true)
	paced, q := singleTinyOnH200(t, h, true)
	var own []float64 // each prefill op's own time (h = 0)
	nDec := 0
	for _, sl := range base.Timeline.All() {
		switch {
		case sl.Phase == partition.Prefill:
			own = append(own, sl.EndS-sl.StartS)
		case sl.Step == 0:
			nDec++
		}
	}
	n := len(own)
	if n < 10 || own[n-1] == 0 || own[n-1] > h/10 {
		t.Fatalf("prefill: %d ops, the last %v: want many ops far below h", n, own)
	}
	last := own[n-1]
	if want := float64(n)*h + last; math.Abs(paced.Prefill.TTFTS-want) > 1e-9*want {
		t.Errorf("TTFT %.9g s, want %d × %g + %.6g = %.9g s", paced.Prefill.TTFTS, n, h, last, want)
	}
	if math.Abs(paced.Decode.TPOTS-base.Decode.TPOTS) > 1e-9*base.Decode.TPOTS { // the same sums at other clock offsets
		t.Errorf("graphed decode: TPOT %g paced, %g not: want the same", paced.Decode.TPOTS, base.Decode.TPOTS)
	}
	i := 0
	for _, sl := range paced.Timeline.All() {
		if sl.Phase != partition.Prefill {
			continue
		}
		// op i (from 0) is queued at (i+1)·h; the device is free at
		// i·h + t_{i−1} (op 0 at the pass's start, 0).
		prev := 0.0
		if i > 0 {
			prev = own[i-1]
		}
		if want := h - prev + own[i]; math.Abs(sl.EndS-sl.StartS-want) > 1e-12 {
			t.Errorf("prefill op %d (%s): %.9g s, want %g − %.6g + %.6g = %.9g s", i, sl.Op.Name, sl.EndS-sl.StartS, h, prev, own[i], want)
		}
		i++
	}
	// The prefill's waits for the host: op 0 waits h, op i h − t_{i−1}:
	// n·h − Σ_{i<n−1} t_i; none at h = 0.
	wantWait := float64(n) * h
	for _, t := range own[:n-1] {
		wantWait -= t
	}
	if math.Abs(paced.Prefill.HostWaitS-wantWait) > 1e-9*wantWait || base.Prefill.HostWaitS != 0 {
		t.Errorf("prefill host wait %.9g s (h = 0: %g), want %.9g s", paced.Prefill.HostWaitS, base.Prefill.HostWaitS, wantWait)
	}
	if want := float64(n) * h; math.Abs(q.TTFTS-want) > 1e-9*want {
		t.Errorf("quick TTFT %.9g s, want %d × %g = %.9g s", q.TTFTS, n, h, want)
	}

	eager, _ := singleTinyOnH200(t, h, false)
	unpaced, _ := singleTinyOnH200(t, 0, false)
	var lastEager float64
	for _, sl := range unpaced.Timeline.All() {
		if sl.Phase == partition.Decode && sl.Step == 0 {
			lastEager = sl.EndS - sl.StartS
		}
	}
	if want := float64(nDec)*h + lastEager; math.Abs(eager.Decode.TPOTS-want) > 1e-9*want {
		t.Errorf("eager decode: TPOT %.9g s, want %d × %g + %.6g = %.9g s", eager.Decode.TPOTS, nDec, h, lastEager, want)
	}
	pr, ok1 := eager.Ranks.Row(0)
	ur, ok2 := unpaced.Ranks.Row(0)
	if want := ur.DecodeBusyS * eager.Decode.TPOTS / unpaced.Decode.TPOTS; !ok1 || !ok2 || !(ur.DecodeBusyS > 0) || math.Abs(pr.DecodeBusyS-want) > 1e-9*want {
		t.Errorf("rank 0: decode busy %g s paced, %g s not: want %g (busy all the time, as TPOT scales)", pr.DecodeBusyS, ur.DecodeBusyS, want)
	}
}
