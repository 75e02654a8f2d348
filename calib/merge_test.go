package calib

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
)

// mergeInput is a small valid CPU calibration of host "h" whose measured
// figures are the arguments: the FLOP rate, the link latency, the 4-rank
// core wait after the shortest burst and that burst's wall time in ns (a
// measured size), the exit lag's burst (a measured context) and the op
// check's measured decode GEMM time.
func mergeInput(flops, latency, wait float64, burstNS, lagCtx int64, opCheck float64) *configs.Calibration {
	link := topology.Link{Class: topology.Network, Name: "TCP over loopback (exec/tcpcomm), 4 ranks as processes", BytesPerS: 1e9, LatencyS: latency}
	cw := configs.CoreWaitShape(2)
	return &configs.Calibration{
		Hardware: topology.GPU{Name: "cpu:AMD EPYC", FP32FLOPsPerS: flops, FP16FLOPsPerS: flops, BF16FLOPsPerS: flops,
			HBMBytes: 25 << 30, HBMReservedBytes: 3 << 30, HBMBytesPerS: 4e10, L2Bytes: 32 << 20, L2UsableFraction: 1,
			L2BytesPerS: 8e10, SMs: 2, SharedMemPerSM: 49152, KernelLaunchS: 1.5e-7, ComputeEfficiency: 1, HBMEfficiency: 1},
		Topology: topology.Topology{Name: "cpu-loopback-4", Nodes: 1, GPUsPerNode: 4, Intra: link},
		Spread: map[string]configs.Spread{
			"fp32_flops_per_s": {Min: 0.9 * flops, Median: flops, Max: 1.1 * flops, N: 5},
			"link_latency_s":   {Min: 0.5 * latency, Median: latency, Max: 2 * latency, N: 5},
		},
		Info: configs.CalibrationInfo{Host: "h", CPU: "AMD EPYC", Cores: 2, Backend: configs.BackendCPU, Date: "2026-11-27T10:00:00Z",
			Version: "dev", Ranks: 4, Repeats: 5, OpTimeProcesses: true, Notes: []string{"measured"}, LoadAverage: []float64{0.5, 1}},
		OpTimes: []configs.OpTime{
			{Kind: "gemm", Shape: "m=1 n=64 k=64", Size: 1, TimeS: 2e-6, TimeMinS: 1e-6, TimeMaxS: 3e-6, Samples: 5, Ranks: 1},
			{Kind: configs.CoreWaitKind, Shape: cw, Size: burstNS, TimeS: wait, TimeMinS: wait / 2, TimeMaxS: 2 * wait, Samples: 10, Ranks: 4},
			{Kind: configs.CoreWaitKind, Shape: cw, Size: 4 * burstNS, TimeS: 3 * wait, TimeMinS: wait, TimeMaxS: 6 * wait, Samples: 10, Ranks: 4},
			{Kind: configs.CoreExitLagKind, Shape: cw, Size: 256, Context: lagCtx, TimeS: 3e-5, TimeMinS: 2e-5, TimeMaxS: 4e-5, Samples: 5, Ranks: 4},
			{Kind: configs.CoreExitLagKind, Shape: cw, Size: 4096, Context: lagCtx, TimeS: 4e-5, TimeMinS: 2e-5, TimeMaxS: 5e-5, Samples: 5, Ranks: 4},
		},
		Remote: &configs.RemoteCalibration{RequestOverheadS: 2 * latency, Transport: "grpc", Config: "test/single-tiny", Samples: 10},
		Comm:   []configs.CommSample{{Op: opSendRecv, Ranks: 2, Bytes: 4096, TimeMinS: latency, TimeMedianS: 2 * latency, TimeMaxS: 3 * latency, ModelTimeS: 1}},
		Ops:    []configs.OpSample{{Config: "single-tiny", Phase: "decode", Kind: "gemm", Calls: 33, MeasuredS: opCheck, ModelS: 1}},
	}
}

func mergeInputs() []*configs.Calibration {
	return []*configs.Calibration{
		mergeInput(1e10, 3e-5, 4e-6, 6000, 6754, 2e-4),
		mergeInput(3e10, 1e-5, 1e-6, 6400, 6473, 3e-4),
		mergeInput(2e10, 2e-5, 6e-6, 5900, 6600, 1e-4),
	}
}

// Every figure of the merged profile is the median of the three (the
// middle one of three), its extremes theirs; the measured sizes and
// contexts too, matched by position.
func TestMerge(t *testing.T) {
	in := mergeInputs()
	in[1].Info.Date = "2026-11-27T11:00:00Z"
	in[2].Info.Warnings = []string{"the machine was busy"}
	got, err := Merge(in, []string{"a.toml", "b.toml", "c.toml"})
	if err != nil {
		t.Fatal(err)
	}
	// Hardware and link: medians of {1, 3, 2}e10 FLOP/s and {3, 1, 2}e-5 s.
	if got.Hardware.FP32FLOPsPerS != 2e10 || got.Hardware.BF16FLOPsPerS != 2e10 || got.Topology.Intra.LatencyS != 2e-5 || got.Hardware.SMs != 2 {
		t.Errorf("hardware %+v link %+v: want 2e10 FLOP/s and 2e-5 s", got.Hardware, got.Topology.Intra)
	}
	// Spreads: median of medians 2e10, least min 0.9e10, greatest max
	// 3.3e10, 15 samples.
	if s := got.Spread["fp32_flops_per_s"]; s.Median != 2e10 || !sameFloat(s.Min, 0.9e10) || !sameFloat(s.Max, 3.3e10) || s.N != 15 {
		t.Errorf("fp32 spread %+v", s)
	}
	want := map[[2]int64]configs.OpTime{ // by (size, context): the median entry, extremes, 3 × samples
		{1, 0}:       {Kind: "gemm", TimeS: 2e-6, TimeMinS: 1e-6, TimeMaxS: 3e-6, Samples: 15},
		{6000, 0}:    {Kind: configs.CoreWaitKind, TimeS: 4e-6, TimeMinS: 0.5e-6, TimeMaxS: 12e-6, Samples: 30}, // sizes 6000, 6400, 5900; waits 4, 1, 6 µs
		{24000, 0}:   {Kind: configs.CoreWaitKind, TimeS: 12e-6, TimeMinS: 1e-6, TimeMaxS: 36e-6, Samples: 30},  // sizes 24000, 25600, 23600
		{256, 6600}:  {Kind: configs.CoreExitLagKind, TimeS: 3e-5, TimeMinS: 2e-5, TimeMaxS: 4e-5, Samples: 15}, // contexts 6754, 6473, 6600
		{4096, 6600}: {Kind: configs.CoreExitLagKind, TimeS: 4e-5, TimeMinS: 2e-5, TimeMaxS: 5e-5, Samples: 15},
	}
	if len(got.OpTimes) != len(want) {
		t.Fatalf("%d op_time entries, want %d: %+v", len(got.OpTimes), len(want), got.OpTimes)
	}
	for _, e := range got.OpTimes {
		w, ok := want[[2]int64{e.Size, e.Context}]
		if !ok || e.Kind != w.Kind || !sameFloat(e.TimeS, w.TimeS) || !sameFloat(e.TimeMinS, w.TimeMinS) || !sameFloat(e.TimeMaxS, w.TimeMaxS) || e.Samples != w.Samples {
			t.Errorf("entry %+v, want %+v", e, w)
		}
	}
	// Link sample: median 2 × 2e-5 s, modeled again with the pooled link.
	c := got.Comm[0]
	m, err := modelComm(commPoint{c.Op, c.Ranks, c.Bytes, c.TimeMedianS}, got.Topology.Intra)
	if err != nil {
		t.Fatal(err)
	}
	if c.TimeMedianS != 4e-5 || c.TimeMinS != 1e-5 || c.TimeMaxS != 9e-5 || c.ModelTimeS != m.TimeS || c.ModelTimeS == 1 {
		t.Errorf("comm sample %+v, want median 4e-5, extremes 1e-5 and 9e-5, model %g", c, m.TimeS)
	}
	// Remote: the median of 6, 2 and 4e-5 s, 30 requests.
	if r := got.Remote; r == nil || r.RequestOverheadS != 4e-5 || r.Samples != 30 || r.Transport != "grpc" {
		t.Errorf("remote %+v", got.Remote)
	}
	// Op check: measured the median of 2, 3 and 1e-4 s; the model side
	// priced from the pooled profile, not the inputs' placeholder 1 s.
	cfg, _, model, err := opCheckModelPlan(got, OpsConfig)
	if err != nil {
		t.Fatal(err)
	}
	name := cfg.Name
	if len(got.Ops) != 1 || got.Ops[0].MeasuredS != 2e-4 || got.Ops[0].Config != name || got.Ops[0].ModelS != model[opCheckKey{"decode", "gemm"}] || got.Ops[0].ModelS == 1 {
		t.Errorf("op check %+v, want measured 2e-4 and model %g", got.Ops, model[opCheckKey{"decode", "gemm"}])
	}
	if got.Info.Date != "2026-11-27T11:00:00Z" || got.Info.Repeats != 15 || len(got.Info.LoadAverage) != 2 || got.Info.LoadAverage[1] != 1 {
		t.Errorf("info %+v: want the newest date, 15 repeats", got.Info)
	}
	if !strings.HasPrefix(got.Info.Notes[0], "merged from 3 calibrations") {
		t.Errorf("first note %q: want the merge's own", got.Info.Notes[0])
	}
	notes := strings.Join(got.Info.Notes, "\n")
	for _, s := range []string{"merged from 3 calibrations of this host: a.toml (2026-11-27T10:00:00Z), b.toml (2026-11-27T11:00:00Z)", "a.toml: measured", "c.toml: measured"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
	// c.toml's warning under its name; the op check judged again: the
	// model side over 2e-4 s measured, beyond 1.5× either way a warning.
	wantWarnings := 1
	if r := got.Ops[0].ModelS / 2e-4; r > OpCheckFactor || r < 1/OpCheckFactor {
		wantWarnings = 2
	}
	if len(got.Info.Warnings) != wantWarnings || got.Info.Warnings[0] != "c.toml: the machine was busy" {
		t.Errorf("warnings %q, want c.toml's and %d in all", got.Info.Warnings, wantWarnings)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
}

func sameFloat(a, b float64) bool { return a == b || (a-b)/b < 1e-12 && (b-a)/b < 1e-12 }

// An op group one calibration lacks is kept from the others, and noted.
func TestMergeGroupInSome(t *testing.T) {
	in := mergeInputs()[:2]
	in[1].OpTimes = in[1].OpTimes[:3] // no exit lags
	got, err := Merge(in, []string{"a.toml", "b.toml"})
	if err != nil {
		t.Fatal(err)
	}
	var lags int
	for _, e := range got.OpTimes {
		if e.Kind == configs.CoreExitLagKind {
			lags++
			if e.Context != 6754 || e.Samples != 5 {
				t.Errorf("exit lag %+v: want a.toml's alone", e)
			}
		}
	}
	if lags != 2 || !strings.Contains(strings.Join(got.Info.Notes, "\n"), `op_time core_exit_lag (shape "cores=2", ranks 4) from a.toml only`) {
		t.Errorf("%d exit lags, notes %q", lags, got.Info.Notes)
	}
}

// A group measured at different points (a turn_off bin one calibration
// did not fill, here b's second core_wait) is merged at the points of the
// calibration with the most entries, each calibration's curve read there
// as sim reads it, clamped to its measured range.
func TestMergeDifferentPoints(t *testing.T) {
	in := mergeInputs()
	in[1].OpTimes = slices.Delete(in[1].OpTimes, 2, 3) // b: core_wait at 6400 ns only (1 µs)
	got, err := Merge(in, []string{"a.toml", "b.toml", "c.toml"})
	if err != nil {
		t.Fatal(err)
	}
	// At a's 6000 ns: a 4 µs; b clamped to its 6400 ns, 1 µs; c between
	// 5900 ns (6 µs) and 23600 ns (18 µs) on a power law,
	// 6·3^(ln(6000/5900)/ln 4) = 6.080 µs: median 4 µs. At a's 24000 ns: a
	// 12, b 1 (clamped), c 18 (clamped to 23600): median 12 µs. Extremes:
	// the entries nearest each point (b's 0.5–2 µs, c's 3–12 µs at 5900,
	// 6–36 µs at 23600) with the values read; samples 3 × 10.
	want := map[int64][3]float64{6000: {4e-6, 0.5e-6, 12e-6}, 24000: {12e-6, 0.5e-6, 36e-6}}
	var n int
	for _, e := range got.OpTimes {
		if e.Kind != configs.CoreWaitKind {
			continue
		}
		n++
		w, ok := want[e.Size]
		if !ok || !sameFloat(e.TimeS, w[0]) || !sameFloat(e.TimeMinS, w[1]) || !sameFloat(e.TimeMaxS, w[2]) || e.Samples != 30 {
			t.Errorf("core_wait %+v, want %v at its size", e, w)
		}
	}
	if n != 2 || !strings.Contains(strings.Join(got.Info.Notes, "\n"), `op_time core_wait (shape "cores=2", ranks 4) measured at different points (a.toml 2, b.toml 1, c.toml 2 entries): merged at a.toml's`) {
		t.Errorf("%d core_wait entries; notes %q", n, got.Info.Notes)
	}
	// The curves themselves at 6000 ns, as the comment derives them.
	waits := func(c *configs.Calibration) []configs.OpTime {
		var out []configs.OpTime
		for _, e := range c.OpTimes {
			if e.Kind == configs.CoreWaitKind {
				out = append(out, e)
			}
		}
		return out
	}
	if _, v := curveOf(waits(in[2]))(6000, 0); math.Abs(v-6.0804e-6) > 1e-10 {
		t.Errorf("c's curve at 6000 ns: %g s, want 6·3^(ln(6000/5900)/ln 4) µs = 6.0804 µs", v)
	}
	if near, v := curveOf(waits(in[1]))(6000, 0); v != 1e-6 || near.Size != 6400 {
		t.Errorf("b's curve at 6000 ns: %g s from %+v, want its 6400 ns entry's 1 µs", v, near)
	}
}

// Calibrations of other hosts, settings or tables are refused, naming the
// field, the files and their values.
func TestMergeRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(b *configs.Calibration)
		want string
	}{
		{"cores", func(b *configs.Calibration) { b.Info.Cores = 4 }, "calibration.cores: a.toml has 2, b.toml has 4"},
		{"host", func(b *configs.Calibration) { b.Info.Host = "g" }, "calibration.host: a.toml has h, b.toml has g"},
		{"quick", func(b *configs.Calibration) { b.Info.Quick = true }, "calibration.quick: a.toml has false, b.toml has true"},
		{"cpu name", func(b *configs.Calibration) { b.Hardware.Name = "cpu:other" }, "hardware.name: a.toml has cpu:AMD EPYC, b.toml has cpu:other"},
		{"remote", func(b *configs.Calibration) { b.Remote.Transport = "tcp" }, "remote: a.toml measured test/single-tiny over grpc, b.toml measured test/single-tiny over tcp"},
		{"op check", func(b *configs.Calibration) { b.Ops[0].Calls = 32 }, "op check decode gemm: 33 calls in a.toml, 32 in b.toml"},
	} {
		in := mergeInputs()[:2]
		c.edit(in[1])
		_, err := Merge(in, []string{"a.toml", "b.toml"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Merge(mergeInputs()[:1], []string{"a.toml"}); err == nil || !strings.Contains(err.Error(), "at least two") {
		t.Errorf("one calibration: %v", err)
	}
}

func TestMergeNames(t *testing.T) {
	got := MergeNames([]string{"x/calib-1.toml", "y/calib-1.toml", "calib-2.toml"})
	if strings.Join(got, " ") != "x/calib-1.toml y/calib-1.toml calib-2.toml" {
		t.Errorf("names %q", got)
	}
}
