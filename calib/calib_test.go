package calib

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/hoststat"
)

func TestCacheFigures(t *testing.T) {
	k := int64(1 << 10)
	sizes := []int64{1 * k, 2 * k, 4 * k, 8 * k, 16 * k, 32 * k, 64 * k, 128 * k}
	for _, c := range []struct {
		name    string
		bw      curveRepeat
		stream  float64
		l2      int64
		l2bw    float64
		wantErr bool
	}{
		// Streaming is the median of the last three (20, 21, 19 → 20); 1.25 ×
		// 20 = 25; scanning down from 16 KiB (index 8−3−1 = 4), 50 ≥ 25, so
		// l2 = 16 KiB; its bandwidth is the median over (4 KiB, 16 KiB]:
		// 8 KiB at 60 and 16 KiB at 50; sorted (50, 60), gonum's empirical
		// median of an even count is the lower middle sample → 50.
		{"steps", curveRepeat{100, 100, 100, 60, 50, 20, 21, 19}, 20, 16 * k, 50, false},
		// A dip at 2 KiB (a neighbour's burst) does not end the cache there.
		{"dip", curveRepeat{100, 10, 100, 60, 50, 20, 21, 19}, 20, 16 * k, 50, false},
		// 24 < 25 at 16 KiB and 32 KiB: the last paying size is 8 KiB, whose
		// window (2 KiB, 8 KiB] holds 4 KiB at 100 and 8 KiB at 60: sorted
		// (60, 100), lower middle → 60.
		{"edge", curveRepeat{100, 100, 100, 60, 24, 24, 20, 20}, 20, 8 * k, 60, false},
		{"no cache pays", curveRepeat{20, 20, 20, 20, 20, 20, 20, 20}, 20, 1 * k, 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream, l2, l2bw, err := cacheFigures(sizes, c.bw)
			if (err != nil) != c.wantErr || stream != c.stream || l2 != c.l2 || l2bw != c.l2bw {
				t.Errorf("got stream %g, l2 %d, l2 bw %g, err %v; want %g, %d, %g, error %v", stream, l2, l2bw, err, c.stream, c.l2, c.l2bw, c.wantErr)
			}
		})
	}
	if got := curveSizes(64 << 10); len(got) != 5 || got[0] != 16<<10 || got[2] != 32<<10 || got[4] != 64<<10 || got[1] != 23168 {
		// 16 KiB · √2 = 23170.5 → 23168 (a multiple of 128).
		t.Errorf("curve sizes %v", got)
	}
}

func TestClipKeepsIntensity(t *testing.T) {
	for _, c := range []struct {
		m, n, k      int
		budget, wcap int64
		wantM, wantN int
	}{
		// Small enough: untouched.
		{2, 64, 64, 1 << 25, 16 << 20, 2, 64},
		// Decode, 16 × 4096 × 4096 (FP32 weight 64 MiB): the 16 MiB cap gives
		// N = 16 MiB / (4 · 4096) = 1024; FLOPs 2·16·1024·4096 = 2^27 > 2^25,
		// so N = 2^25 / (2·16·4096) = 256; M stays 16.
		{16, 4096, 4096, 1 << 25, 16 << 20, 16, 256},
		// Prefill, 157952 × 1536 × 4096: N = 1024 by the cap; M is cut to 128
		// (2^25 / (2·1024·4096) = 4 < 128); then N = 2^25 / (2·128·4096) = 32
		// is below the floor of 64; M = 2^25 / (2·64·4096) = 64.
		{157952, 1536, 4096, 1 << 25, 16 << 20, 64, 64},
	} {
		s := gemmShape{m: c.m, n: c.n, k: c.k}
		s.clip(c.budget, c.wcap)
		if s.mm != c.wantM || s.mn != c.wantN {
			t.Errorf("%d×%d×%d: measured %d×%d, want %d×%d", c.m, c.n, c.k, s.mm, s.mn, c.wantM, c.wantN)
		}
	}
}

func TestProgramShapesOfTheTinyConfig(t *testing.T) {
	shapes, err := programShapes([]string{"test/tp2pp2-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	// TP = 2 of hidden 64, 8 heads, 4 KV heads of 8, FFN 128 gated, vocab 96:
	// qkv N = (4 + 2·2)·8 = 64; wo K = 4·8 = 32; w_up N = 2·128/2 = 128;
	// w_down K = 64 (the same shape as wqkv); lm_head N = 96/2 = 48.
	// Rows: prefill 2 sequences × 20 prompt tokens = 40 (the LM head takes
	// the last position only: 2); decode 2.
	want := map[[3]int]bool{{40, 64, 64}: true, {40, 64, 32}: true, {40, 128, 64}: true, {2, 48, 64}: true,
		{2, 64, 64}: true, {2, 64, 32}: true, {2, 128, 64}: true}
	if len(shapes) != len(want) {
		t.Errorf("%d shapes, want %d: %+v", len(shapes), len(want), shapes)
	}
	for _, s := range shapes {
		if !want[[3]int{s.m, s.n, s.k}] {
			t.Errorf("unexpected shape %d×%d×%d (%s)", s.m, s.n, s.k, s.source)
		}
	}
}

func TestFitFLOPsRecoversTheRate(t *testing.T) {
	mem := memFigures{streamBytesPerS: 4e10, l2Bytes: 32 << 20, l2BytesPerS: 7e10}
	shapes := []gemmShape{{m: 2, n: 64, k: 64}, {m: 40, n: 128, k: 64}, {m: 16, n: 256, k: 4096}, {m: 128, n: 256, k: 4096}}
	times := make([]float64, len(shapes))
	for i := range shapes {
		shapes[i].mm, shapes[i].mn = shapes[i].m, shapes[i].n
		times[i] = rooflineS(shapes[i], 1.5e10, mem)
	}
	f, ok := fitFLOPs(shapes, times, mem)
	if !ok || math.Abs(f/1.5e10-1) > 1e-3 {
		t.Errorf("fit %g (ok %v), want 1.5e10", f, ok)
	}
	// A GPU's rate, beyond 10^14: H100-like memory (3.3 TB/s, 50 MiB of L2
	// at 10 TB/s) and 8e14 FLOP/s over fp16 shapes large enough to be
	// compute-bound.
	gmem := memFigures{streamBytesPerS: 3.3e12, l2Bytes: 50 << 20, l2BytesPerS: 1e13}
	gshapes := []gemmShape{{m: 4096, n: 12288, k: 4096, elem: 2}, {m: 4096, n: 4096, k: 16384, elem: 2}, {m: 16, n: 4096, k: 4096, elem: 2}}
	gtimes := make([]float64, len(gshapes))
	for i := range gshapes {
		gshapes[i].mm, gshapes[i].mn = gshapes[i].m, gshapes[i].n
		gtimes[i] = rooflineS(gshapes[i], 8e14, gmem)
	}
	if f, ok := fitFLOPs(gshapes, gtimes, gmem); !ok || math.Abs(f/8e14-1) > 1e-3 {
		t.Errorf("GPU fit %g (ok %v), want 8e14", f, ok)
	}
	// Times shorter than the memory terms alone: any F leaves the model
	// slower than measured, the best F is the top of the range, and F is not
	// determined.
	for i := range times {
		times[i] = rooflineS(shapes[i], 1e20, mem) / 2
	}
	if _, ok := fitFLOPs(shapes, times, mem); ok {
		t.Error("memory-bound times gave a FLOP rate")
	}
}

func TestFitLinkRecoversAlphaBeta(t *testing.T) {
	link := linkOf("truth", 30e-6, 3e8)
	var pts []commPoint
	for _, op := range []struct {
		op    string
		ranks int
	}{{opAllReduce, 4}, {opAllReduce, 2}, {opSendRecv, 2}} {
		for _, b := range QuickCommSizes {
			e, err := modelComm(commPoint{op: op.op, ranks: op.ranks, bytes: b}, link)
			if err != nil {
				t.Fatal(err)
			}
			pts = append(pts, commPoint{op.op, op.ranks, b, e.TimeS})
		}
	}
	a, b, err := fitLink(pts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a/30e-6-1) > 0.02 || math.Abs(b/3e8-1) > 0.02 {
		t.Errorf("fit α %g, β %g; want 3e-05, 3e+08", a, b)
	}
	// The raw line: points on t = 5 + 2·s give it back whatever the weights.
	if a, b := lineFit([]float64{0, 1, 2, 100}, []float64{5, 7, 9, 205}); math.Abs(a-5) > 1e-9 || math.Abs(b-2) > 1e-12 {
		t.Errorf("line %g + %g·s", a, b)
	}
}

func TestImpliedResidency(t *testing.T) {
	// 1/20 = f/40 + (1−f)/10 → f = (1 − 10/20) / (1 − 10/40) = 2/3.
	r := Reuse{ReuseBytesPerS: 20, StreamBytesPerS: 10}
	if f, ok := r.ImpliedResidency(40); !ok || math.Abs(f-2.0/3) > 1e-12 {
		t.Errorf("f = %g (ok %v), want 2/3", f, ok)
	}
	// Re-reading slower than streaming: nothing resident.
	if f, _ := (Reuse{ReuseBytesPerS: 8, StreamBytesPerS: 10}).ImpliedResidency(40); f != 0 {
		t.Errorf("f = %g, want 0", f)
	}
	// Faster than the cache itself: all of it.
	if f, _ := (Reuse{ReuseBytesPerS: 50, StreamBytesPerS: 10}).ImpliedResidency(40); f != 1 {
		t.Errorf("f = %g, want 1", f)
	}
	if _, ok := r.ImpliedResidency(10); ok {
		t.Error("a cache no faster than streaming implied a residency")
	}
}

func TestProbeReuseSmall(t *testing.T) {
	r := ProbeReuse(64<<10, ProbeOptions{ColdBytes: 4 << 20, Repeats: 1, MinSample: 100 * time.Microsecond})
	if r.Bytes != 64<<10 || r.MeasuredBytes != 64<<10 || !(r.ReuseBytesPerS > 0) || !(r.StreamBytesPerS > 0) ||
		r.Ratio != r.ReuseBytesPerS/r.StreamBytesPerS {
		t.Errorf("probe %+v", r)
	}
	for _, c := range []struct{ ask, want int64 }{{1 << 40, ProbeMaxBytes}, {1, 256}, {1000, 896}, {64 << 10, 64 << 10}} {
		if got := probeBytes(c.ask); got != c.want {
			t.Errorf("a working set of %d B is measured at %d B, want %d", c.ask, got, c.want)
		}
	}
}

func TestUnknownBackendIsRefused(t *testing.T) {
	if _, err := Run(context.Background(), Options{Backend: "tpu"}); err == nil || !strings.Contains(err.Error(), `--backend: must be cpu or cuda (got "tpu")`) {
		t.Errorf("error %v", err)
	}
}

// A small quick calibration runs end to end and writes a file that loads.
func TestQuickCalibrationLoads(t *testing.T) {
	var steps, total int
	cal, err := Run(context.Background(), Options{Quick: true, Ranks: 2, Repeats: 2, MinSample: 100 * time.Microsecond,
		Configs: []string{"test/tp2pp2-tiny"}, MaxWorkingSetBytes: 2 << 20, CommSizes: []int64{16, 4096}, Version: "test",
		Progress: func(d, n int) { steps, total = d, n }})
	if err != nil {
		t.Fatal(err)
	}
	if steps != total || total == 0 {
		t.Errorf("progress ended at %d of %d", steps, total)
	}
	for _, k := range configs.CPUSpreadKeys {
		if s, ok := cal.Spread[k]; !ok || s.N != 2 {
			t.Errorf("spread %s: %+v (present %v)", k, s, ok)
		}
	}
	// 7 tiny shapes; all_reduce over 2 ranks and sendrecv at 2 sizes each,
	// the all_gather over 2 ranks at those and the payloads the default op
	// configs' 2-rank Programs gather: 768 B (tp2pp2-tiny's 2 sequences a
	// micro-batch × 96 ids × 4 B, and tp2-dp2-tiny's) and 1536 B (tp2-tiny's
	// 4 sequences).
	if len(cal.GEMM) != 7 || len(cal.Comm) != 8 || len(cal.Ops) == 0 || len(cal.Cache) == 0 {
		t.Errorf("%d GEMM, %d comm, %d op, %d cache samples", len(cal.GEMM), len(cal.Comm), len(cal.Ops), len(cal.Cache))
	}
	checkAllGatherEntries(t, cal, []int64{16, 768, 1536, 4096})
	g := cal.Hardware
	if g.ComputeEfficiency != 1 || g.HBMEfficiency != 1 || g.FP16FLOPsPerS != g.FP32FLOPsPerS || g.FP8FLOPsPerS != 0 ||
		cal.Topology.GPUsPerNode != 2 || cal.Topology.Intra.Class != "network" {
		t.Errorf("profile %+v topology %+v", g, cal.Topology)
	}
	var b bytes.Buffer
	if err := cal.WriteTOML(&b, []string{"partbench calibration: test"}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "calib.toml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := configs.LoadCalibration(p)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if cal.Remote == nil || back.Remote == nil || *back.Remote != *cal.Remote || cal.Remote.Samples != 2*remoteQuickSamples || cal.Remote.Transport != "grpc" {
		t.Errorf("remote request overhead: measured %+v, loaded back %+v", cal.Remote, back.Remote)
	}
	if back.Hardware != cal.Hardware || back.Topology != cal.Topology {
		t.Errorf("loaded %+v %+v, wrote %+v %+v", back.Hardware, back.Topology, cal.Hardware, cal.Topology)
	}
}

// The host's window over a calibration is stated in its load average and
// notes; more than 1 % of its CPU time stolen is a warning, which the busy
// machine's warning then sits beside.
func TestStateHost(t *testing.T) {
	cal := &configs.Calibration{Info: configs.CalibrationInfo{Cores: 2}}
	stateHost(cal, hoststat.Window{LoadStart: 0.4, LoadEnd: 1.1, CPUs: 2, BusyFraction: 0.6, StealFraction: 0.005})
	if la := cal.Info.LoadAverage; len(la) != 2 || la[0] != 0.4 || la[1] != 1.1 || len(cal.Info.Warnings) != 0 ||
		len(cal.Info.Notes) != 1 || cal.Info.Notes[0] != "host over the calibration: 1-minute load 0.40 → 1.10 on 2 CPUs, busy 60 %, 0.5 % stolen by the hypervisor" {
		t.Errorf("quiet host: %+v", cal.Info)
	}
	cal = &configs.Calibration{Info: configs.CalibrationInfo{Cores: 2}}
	stateHost(cal, hoststat.Window{LoadStart: 0.4, LoadEnd: 1.1, CPUs: 2, BusyFraction: 0.6, StealFraction: 0.03})
	if len(cal.Info.Warnings) != 1 || !strings.HasPrefix(cal.Info.Warnings[0], "the hypervisor gave 3.0 % of the host's CPU time to other guests") {
		t.Errorf("3 %% stolen: warnings %q", cal.Info.Warnings)
	}
	// Knowing its own share, the note splits the busy share: others 60 − 1
	// stolen − 45 own = 14 %.
	cal = &configs.Calibration{Info: configs.CalibrationInfo{Cores: 2}}
	stateHost(cal, hoststat.Window{LoadStart: 0.4, LoadEnd: 1.1, CPUs: 2, BusyFraction: 0.6, StealFraction: 0.01, OwnFraction: 0.45, OwnKnown: true})
	if len(cal.Info.Notes) != 1 || !strings.HasSuffix(cal.Info.Notes[0], "1.0 % stolen by the hypervisor; the calibration and its rank processes 45 %, other processes 14 %") {
		t.Errorf("own share known: notes %q", cal.Info.Notes)
	}
}

// A calibration is flagged when it was measured on a busy machine — other
// processes above a quarter of the host's CPU time, or, where the window
// does not know the calibration's own share, a load average above 1.5 per
// core — or when its op check misses by more than 1.5× either way; a quiet,
// agreeing one is not, nor one whose own rank processes raised the load.
func TestJudgeCalibration(t *testing.T) {
	cal := func(la []float64, meas, model float64) *configs.Calibration {
		return &configs.Calibration{Info: configs.CalibrationInfo{Cores: 2, LoadAverage: la},
			Ops: []configs.OpSample{{MeasuredS: meas, ModelS: model}}}
	}
	// 16 rank processes of its own: load 0.42 → 4.58 on 2 CPUs, busy 95 %,
	// the calibration 90 %: others 5 %.
	own := hoststat.Window{LoadStart: 0.42, LoadEnd: 4.58, CPUs: 2, BusyFraction: 0.95, OwnFraction: 0.9, OwnKnown: true}
	// A compiler beside a calibration: busy 100 %, 2 % stolen, the
	// calibration 60 %: others 38 %.
	beside := hoststat.Window{LoadStart: 2.1, LoadEnd: 2.6, CPUs: 2, BusyFraction: 1, StealFraction: 0.02, OwnFraction: 0.6, OwnKnown: true}
	// The same share, the own share unknown: the load decides.
	noOwn := beside
	noOwn.OwnKnown = false
	for _, c := range []struct {
		name string
		cal  *configs.Calibration
		w    hoststat.Window
		want []string
	}{
		{"quiet, agreeing", cal([]float64{0.5, 1.2}, 1, 1.1), hoststat.Window{}, nil},
		{"busy: 3.38 > 1.5 × 2 cores", cal([]float64{3.38, 2.9}, 1, 1.1), hoststat.Window{}, []string{"the machine was busy: 1-minute load average 3.38"}},
		{"its own ranks' load", cal([]float64{0.42, 4.58}, 1, 1.1), own, nil},
		{"others 38 %", cal([]float64{2.1, 2.6}, 1, 1.1), beside,
			[]string{"the machine was busy: other processes took 38 % of the host's CPU time while calibrating (more than 25 %; the calibration itself 60 %, 1-minute load 2.10 → 2.60 on 2 CPUs)"}},
		{"own share unknown, load 2.6 < 3", cal([]float64{2.1, 2.6}, 1, 1.1), noOwn, nil},
		{"op check 3.38×", cal([]float64{0.5, 0.5}, 1, 3.38), hoststat.Window{}, []string{"the calibrated model is 3.38×"}},
		{"op check 0.5×", cal([]float64{0.5, 0.5}, 2, 1), hoststat.Window{}, []string{"the calibrated model is 0.50×"}},
		{"exactly 1.5× is within", cal([]float64{3, 3}, 1, 1.5), hoststat.Window{}, nil},
	} {
		judgeCalibration(c.cal, c.w)
		got := c.cal.Info.Warnings
		if len(got) != len(c.want) {
			t.Errorf("%s: warnings %q, want %d", c.name, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %q lacks %q", c.name, got[i], w)
			}
		}
	}
}
