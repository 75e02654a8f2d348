//go:build cgo

package calib

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// fakeCUDACalibration runs the GPU calibration on the fake driver, cuBLAS
// and NVRTC (no NCCL: its search is pointed at a missing file), over the
// tiny one-rank config's shapes and a curve of 1 to 16 MiB.
func fakeCUDACalibration(t *testing.T, opConfigs ...string) *configs.Calibration {
	t.Helper()
	cudatest.Build(t).Setenv(t)
	t.Setenv("PARTBENCH_NCCL_LIB", filepath.Join(t.TempDir(), "libnccl.so.2"))
	if len(opConfigs) == 0 {
		opConfigs = []string{"test/single-tiny"}
	}
	var steps, total int
	cal, err := Run(context.Background(), Options{Backend: "cuda", Quick: true, Repeats: 2, MinSample: time.Millisecond,
		Configs: []string{"test/single-tiny"}, OpConfigs: opConfigs, MaxWorkingSetBytes: 16 << 20, Version: "test",
		Progress: func(d, n int) { steps, total = d, n }})
	if err != nil {
		t.Fatal(err)
	}
	if steps != total || total == 0 {
		t.Errorf("progress ended at %d of %d", steps, total)
	}
	return cal
}

// The GPU calibration on the fakes, with figures derived from the fake's
// clock: every event record is 0.25 ms after the last, so a sample of any
// number of calls lasts 0.25 ms; with samples of at least 1 ms, a call
// that probes at 0.25 ms is timed 4 to a sample: 62.5 µs per call.
func TestCUDACalibrationOnFakes(t *testing.T) {
	cal := fakeCUDACalibration(t)
	if cal.Info.Backend != "cuda" || cal.Info.Ranks != 1 || !strings.HasPrefix(cal.Info.Device, "Fake H100 0 (sm_90, 132 SMs, GPU 0)") ||
		!strings.HasPrefix(cal.Info.Driver, "CUDA driver ") {
		t.Errorf("info %+v", cal.Info)
	}
	g := cal.Hardware
	if g.Name != "Fake H100 0" || g.SMs != 132 || !g.CUDAGraphs || cal.Topology.Size() != 1 {
		t.Errorf("profile %+v, topology %+v", g, cal.Topology)
	}
	// Every read call reads at least 256 MiB (1 MiB × 256 passes, …,
	// 16 MiB × 16): 2^28 B / 62.5 µs at every working set.
	const readBW = float64(1<<28) / 62.5e-6
	if len(cal.Cache) != 5 || cal.Cache[0].Bytes != 1<<20 || cal.Cache[4].Bytes != 16<<20 {
		t.Fatalf("curve %+v, want 1, 2, 4, 8, 16 MiB", cal.Cache)
	}
	for _, c := range cal.Cache {
		if c.BytesPerSMedian != readBW || c.ReuseOverStream != 1 {
			t.Errorf("curve point %+v, want %g B/s, 1× stream", c, readBW)
		}
	}
	if g.HBMBytesPerS != readBW {
		t.Errorf("hbm %g B/s, want %g", g.HBMBytesPerS, readBW)
	}
	// Copies: 2 × 256 MiB per 62.5 µs.
	if s := cal.Spread["hbm_copy_bytes_per_s"]; s.Median != 2*float64(256<<20)/62.5e-6 || s.N != 2 {
		t.Errorf("copy spread %+v", s)
	}
	// A graph of 100 kernels launched 100 times per sample: 0.25 ms / 100 /
	// 100 = 25 ns per kernel inside it.
	if !near(g.GraphKernelS, 0.25e-3/100/100) || !(g.GraphLaunchS > 0) {
		t.Errorf("graph kernel %g s, launch %g s", g.GraphKernelS, g.GraphLaunchS)
	}
	// Empty kernels, 1000 per sample: 250 ns of device time each, or the
	// host's enqueue time when that is longer.
	if !(g.KernelLaunchS >= 0.25e-3/1000) {
		t.Errorf("kernel launch %g s, want ≥ 250 ns", g.KernelLaunchS)
	}
	for _, k := range configs.CUDASpreadKeys {
		if s, ok := cal.Spread[k]; (!ok || s.N != 2) && k != "nccl_all_reduce_s" && k != "step_overhead_s" && k != "graph_op_saved_s" && k != "host_op_s" {
			t.Errorf("spread %s: %+v (present %v)", k, s, ok)
		}
	}
	// The decode steps, run with graphs, take far less wall time on the
	// fake than on its event clock (a quarter millisecond per record): the
	// host's share is negative, and 0 is used, with a note.
	if s := cal.Spread["step_overhead_s"]; s.N != stepIterations || !(s.Median < 0) || g.StepOverheadS != 0 ||
		!slices.ContainsFunc(cal.Info.Notes, func(n string) bool {
			return strings.HasPrefix(n, "step_overhead_s: the decode steps of [single-tiny] ran")
		}) {
		t.Errorf("step overhead %+v, figure %g, notes %q", s, g.StepOverheadS, cal.Info.Notes)
	}
	// The host's time to queue an eager op (TestHostOpTime derives it on
	// a virtual clock): one figure per measured iteration, the profile's
	// their median.
	if s := cal.Spread["host_op_s"]; s.N != stepIterations || !(s.Median > 0) || g.HostOpS != s.Median {
		t.Errorf("host_op_s %g, spread %+v", g.HostOpS, s)
	}
	// What the graph saves per op: see TestCUDAGraphOpSavedOnFakes.
	if want := graphSavedOnFake(t, "test/single-tiny"); !near(g.GraphOpSavedS, want) {
		t.Errorf("graph_op_saved_s %g, want %g", g.GraphOpSavedS, want)
	}
	// No NCCL here: the latency is skipped, saying why.
	if _, ok := cal.Spread["nccl_all_reduce_s"]; ok || !slices.ContainsFunc(cal.Info.Notes, func(n string) bool {
		return strings.Contains(n, "one-rank NCCL all_reduce latency skipped") && strings.Contains(n, "libnccl.so.2")
	}) {
		t.Errorf("notes %q", cal.Info.Notes)
	}

	// The GEMMs are the Program's own shapes in each of the three dtypes,
	// then the small-M sweep at each distinct (N, K) in the config's dtype.
	shapes, err := programShapes([]string{"test/single-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := configs.Load("test/single-tiny")
	type nk struct{ n, k int }
	distinct := map[nk]bool{}
	for _, s := range shapes {
		distinct[nk{s.n, s.k}] = true
	}
	if want := 3*len(shapes) + len(SmallMs)*len(distinct); len(cal.GEMM) != want {
		t.Fatalf("%d GEMM samples, want 3 × %d shapes + %d × %d", len(cal.GEMM), len(shapes), len(SmallMs), len(distinct))
	}
	for i, dt := range CUDAGEMMDTypes {
		for j, s := range shapes {
			got := cal.GEMM[i*len(shapes)+j]
			if got.DType != dt || got.M != s.m || got.N != s.n || got.K != s.k || got.MeasuredM != s.m || got.TimeMedianS != 62.5e-6 {
				t.Errorf("%s shape %d: %+v, want %d×%d×%d at 62.5 µs", dt, j, got, s.m, s.n, s.k)
			}
		}
	}
	// The fake times every call alike, so along the small-M sweep the rate
	// grows with M, as on a GPU where a decode GEMM is bound by its weights.
	sweep := cal.GEMM[3*len(shapes):]
	for i := 1; i < len(sweep); i++ {
		a, b := sweep[i-1], sweep[i]
		if a.N == b.N && a.K == b.K && !(b.M > a.M && b.FLOPsPerS > a.FLOPsPerS) {
			t.Errorf("small-M sweep not monotone: %+v then %+v", a, b)
		}
		if b.DType != cfg.Model.DType {
			t.Errorf("sweep in %s, want the config's %s", b.DType, cfg.Model.DType)
		}
	}

	// The op times come from the backend's device clock: each op lies
	// between two marks, 0.25 ms apart on the fake.
	if len(cal.OpTimes) == 0 || cal.Info.OpTimeDType != cfg.Model.DType {
		t.Fatalf("%d op times in %q, want some in the config's %s", len(cal.OpTimes), cal.Info.OpTimeDType, cfg.Model.DType)
	}
	for _, e := range cal.OpTimes {
		if !near(e.TimeS, 0.25e-3) || e.Ranks != 1 {
			t.Errorf("op time %+v, want 0.25 ms at 1 rank", e)
		}
	}
	tab := sim.NewOpTable(cal.OpTimes)
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
		for _, op := range plan.Program(0, ph).Ops {
			if _, ok := tab.Time(&op); !ok {
				t.Errorf("%s %s (%s): no op-time entry", ph, op.Name, op.Kind)
			}
		}
	}

	// The file round-trips through the configs reader.
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
	if back.Hardware != cal.Hardware || back.Topology != cal.Topology || back.Info.Device != cal.Info.Device || back.Info.Driver != cal.Info.Driver ||
		!slices.Equal(back.GEMM, cal.GEMM) || !slices.Equal(back.OpTimes, cal.OpTimes) || len(back.Spread) != len(cal.Spread) {
		t.Errorf("loaded back differs:\n%+v\nwrote\n%+v", back, cal)
	}
	// And a one-GPU config takes it: every op priced from the table.
	run, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	back.Apply(run)
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(run.Hardware.OpTimes) != len(cal.OpTimes) || run.Hardware.Name != "Fake H100 0" {
		t.Errorf("applied: %d op times, hardware %q", len(run.Hardware.OpTimes), run.Hardware.Name)
	}
}

// near is equality but for float rounding (a difference of two marks on
// the fake's clock, a sum of quarter milliseconds, is not exact).
func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }

// graphSavedOnFake is what a decode graph saves per op on the fake's
// clock, for config's one rank, derived by hand: the table times each of
// the decode step's n compute ops between two marks (a mark before the
// pass and one after each op), 0.25 ms per op on the fake, so the step's
// ops sum to n × 0.25 ms; the graphed step between its two marks holds
// three event records — the run's own timer's two around the graph launch
// and the closing mark — 0.75 ms. So (n × 0.25 − 0.75) / n ms.
func graphSavedOnFake(t *testing.T, config string) float64 {
	t.Helper()
	plan, err := partition.LoadPlan(config)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, op := range plan.Program(0, partition.Decode).Ops {
		if _, comm := op.Kind.Comm(); !comm {
			n++
		}
	}
	if n < 4 {
		t.Fatalf("%s: %d decode compute ops", config, n)
	}
	return (float64(n)*0.25e-3 - 0.75e-3) / float64(n)
}

// Every op config's decode graph is measured, not only the first: two
// one-rank configs of different op counts, each saving graphSavedOnFake's
// figure (single-tiny's and gpt2-tiny's op counts differ, so do their
// figures). graph_op_saved_s is their median — the project's one median
// (stats.Median, gonum's empirical quantile), of two the smaller — its
// spread their min and max over n = 2, and each config's figure is in the
// notes.
// A config of several ranks is an op config on one GPU too: its ops are
// timed one rank per stage (tp2pp2-tiny: ranks 0 and 2), every compute op
// of every rank then has an entry, and its decode graph is not measured
// (its steps wait on communication), with a note: graph_op_saved_s is
// single-tiny's alone.
func TestCUDAOpConfigOfSeveralRanksOnFakes(t *testing.T) {
	cal := fakeCUDACalibration(t, "test/single-tiny", "test/tp2pp2-tiny")
	plan, err := partition.LoadPlan("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range unpricedOps(plan, sim.NewOpTable(cal.OpTimes)) {
		t.Errorf("%s: no op-time entry", m)
	}
	if !slices.ContainsFunc(cal.Info.Notes, func(n string) bool {
		return strings.HasPrefix(n, "decode graph: tp2pp2-tiny has 4 ranks") && strings.Contains(n, "not measured")
	}) {
		t.Errorf("notes %q lack tp2pp2-tiny's decode graph", cal.Info.Notes)
	}
	if s := cal.Spread["graph_op_saved_s"]; s.N != 1 || !near(cal.Hardware.GraphOpSavedS, graphSavedOnFake(t, "test/single-tiny")) {
		t.Errorf("graph_op_saved_s %g (spread %+v), want single-tiny's alone", cal.Hardware.GraphOpSavedS, s)
	}
}

func TestCUDAGraphOpSavedOnFakes(t *testing.T) {
	cal := fakeCUDACalibration(t, "test/single-tiny", "test/gpt2-tiny")
	a, b := graphSavedOnFake(t, "test/single-tiny"), graphSavedOnFake(t, "test/gpt2-tiny")
	if a == b {
		t.Fatalf("the two configs save the same %g per op: the test cannot tell them apart", a)
	}
	s := cal.Spread["graph_op_saved_s"]
	if s.N != 2 || !near(s.Min, min(a, b)) || !near(s.Max, max(a, b)) || !near(s.Median, min(a, b)) || !near(cal.Hardware.GraphOpSavedS, min(a, b)) {
		t.Errorf("graph_op_saved_s %g, spread %+v; want %g, the median of %g and %g", cal.Hardware.GraphOpSavedS, s, min(a, b), a, b)
	}
	for _, c := range []struct {
		name  string
		saved float64
	}{{"single-tiny", a}, {"gpt2-tiny", b}} {
		want := fmt.Sprintf("decode graph: %s: a step's ", c.name)
		per := fmt.Sprintf("%.3g s per op", c.saved)
		if !slices.ContainsFunc(cal.Info.Notes, func(n string) bool { return strings.HasPrefix(n, want) && strings.Contains(n, per) }) {
			t.Errorf("no note %q…%q in %q", want, per, cal.Info.Notes)
		}
	}
	// The host's share is over both configs' iterations.
	if o := cal.Spread["step_overhead_s"]; o.N != 2*stepIterations {
		t.Errorf("step overhead spread %+v, want %d iterations", o, 2*stepIterations)
	}
	// The profile prices with it: a decode op of single-tiny priced from
	// the table at 0.25 ms is charged 0.25 ms − graph_op_saved_s.
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cal.Apply(cfg)
	e, err := sim.EstimateConfig(cfg, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gemms := 0
	for _, sl := range e.Timeline.All() {
		if sl.Phase == partition.Decode && sl.Bound == sim.BoundTable && sl.Op.Kind == partition.Gemm {
			gemms++
			if d := sl.EndS - sl.StartS; !near(d, 0.25e-3-min(a, b)) {
				t.Fatalf("decode %s priced %g s, want 0.25 ms − %g s", sl.Op.Name, d, min(a, b))
			}
		}
	}
	if gemms == 0 {
		t.Error("no decode GEMM priced from the table")
	}
}
