package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// writeTestCalibration writes cal to a temporary file and returns its path.
func writeTestCalibration(t *testing.T, cal *configs.Calibration) string {
	t.Helper()
	var b bytes.Buffer
	if err := cal.WriteTOML(&b, []string{"test calibration"}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "calib.toml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cpuLikeCalibration is a profile shaped like this project's 2-core CPU
// measurement (docs/measurements/cpu-calibration.md), fixed so tests do not
// depend on the machine: 15 GFLOP/s, 44 GB/s, a 32 MiB cache at 69 GB/s,
// 0.15 µs per op, and a TCP link of α = 30 µs, β = 0.3 GB/s among 4 ranks.
func cpuLikeCalibration() *configs.Calibration {
	return &configs.Calibration{
		Hardware: topology.GPU{Name: "cpu:test", FP32FLOPsPerS: 1.5e10, FP16FLOPsPerS: 1.5e10, BF16FLOPsPerS: 1.5e10,
			HBMBytes: 24 << 30, HBMReservedBytes: 2 << 30, HBMBytesPerS: 4.4e10, L2Bytes: 32 << 20, L2UsableFraction: 1,
			L2BytesPerS: 6.9e10, SMs: 2, KernelLaunchS: 1.5e-7, ComputeEfficiency: 1, HBMEfficiency: 1},
		Topology: topology.Topology{Name: "cpu-loopback-4", Nodes: 1, GPUsPerNode: 4,
			Intra: topology.Link{Class: topology.Network, Name: "TCP over loopback", BytesPerS: 3e8, LatencyS: 30e-6}},
		Info: configs.CalibrationInfo{Backend: configs.BackendCPU, Ranks: 4, Repeats: 5, Date: "2026-01-01T00:00:00Z"},
	}
}

func tinyEstimate(t *testing.T, calibration string) (*sim.Estimate, []string) {
	t.Helper()
	return estimateWith(t, "test/tp2pp2-tiny", calibration)
}

// estimateWith estimates a config with a calibration applied ("" = none).
func estimateWith(t *testing.T, name, calibration string) (*sim.Estimate, []string) {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := configs.ApplyCalibrationFile(cfg, calibration)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.EstimateConfig(cfg, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e, notes
}

func TestCalibrationMovesTheTinyEstimate(t *testing.T) {
	h100, notes := tinyEstimate(t, "")
	if notes != nil || h100.Hardware != "H100-SXM5-80GB" {
		t.Fatalf("no calibration: hardware %q, notes %q", h100.Hardware, notes)
	}

	// 1. The H100 profile with a 1 µs instead of a 4 µs launch, links as the
	// config has them. Every compute op costs max(roofline terms) + launch,
	// the roofline terms are unchanged, so every compute op is exactly 3 µs
	// shorter and no op is longer: TPOT must fall. Each token interval of a
	// micro-batch holds at least one whole stage pass of that micro-batch
	// (the next token needs this one), and a stage pass of tp2pp2-tiny runs
	// 4 layers × 10 compute ops (2 norms, 4 GEMMs, attention, activation, 2
	// residuals) on each rank: TPOT falls by at least 40 × 3 µs = 120 µs.
	cfg, _ := configs.Load("test/tp2pp2-tiny")
	fast := &configs.Calibration{Hardware: cfg.Hardware.GPU, Topology: topology.Topology{Name: "same", Nodes: 1, GPUsPerNode: 4, Intra: cfg.Topology.Intra},
		Info: configs.CalibrationInfo{Backend: configs.BackendCPU, Ranks: 4}}
	fast.Hardware.KernelLaunchS = 1e-6
	e, _ := tinyEstimate(t, writeTestCalibration(t, fast))
	if drop := h100.Decode.TPOTS - e.Decode.TPOTS; drop < 120e-6 {
		t.Errorf("launch 4 → 1 µs: TPOT %.4g → %.4g s, a drop of %.3g s; want ≥ 120 µs", h100.Decode.TPOTS, e.Decode.TPOTS, drop)
	}

	// 2. The CPU-like profile. Its link is 30× slower in latency than the
	// config's NVLink (30 µs against 1 µs). A micro-batch's token path runs
	// its 16 layer all-reduces (2 per layer, 8 layers, TP groups of 2) one
	// after another; a ring or tree all-reduce over 2 ranks takes at least 2
	// link latencies, so TPOT ≥ 16 × 2 × 30 µs = 0.96 ms, above the H100
	// estimate (0.58 ms, latency-bound on 4 µs launches and NCCL overheads).
	// The faster per-op cost (0.15 µs) cannot win this back: the path holds
	// ~80 compute ops, 80 × 3.85 µs ≈ 0.31 ms.
	e, notes = tinyEstimate(t, writeTestCalibration(t, cpuLikeCalibration()))
	if e.Hardware != "cpu:test" || len(notes) != 2 {
		t.Errorf("hardware %q, notes %q", e.Hardware, notes)
	}
	// The H100 preset now also charges a 2 ms host step overhead per pass,
	// which the CPU-like profile (step_overhead_s = 0) does not: compare
	// links against the H100 without it, as the reasoning above does.
	h100cfg, _ := configs.Load("test/tp2pp2-tiny")
	h100cfg.Hardware.StepOverheadS = 0
	h100NoStep, err := sim.EstimateConfig(h100cfg, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Decode.TPOTS < 0.96e-3 || e.Decode.TPOTS <= h100NoStep.Decode.TPOTS {
		t.Errorf("CPU-like profile: TPOT %.4g s; want ≥ 0.96 ms and above the H100's %.4g s (no step overhead)", e.Decode.TPOTS, h100NoStep.Decode.TPOTS)
	}
	for _, c := range e.Collectives {
		if c.Link != topology.Network {
			t.Errorf("collective %s runs over %s, want the calibrated network link", c.Name, c.Link)
		}
	}
}

func TestCalibrateCommandErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.toml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate"}, "calibrate: --output is required"},
		{[]string{"calibrate", "--out", out, "--backend", "tpu"}, `--backend: must be cpu or cuda (got "tpu")`},
		{[]string{"calibrate", "--out", out, "--nproc", "0"}, "--nproc: must be in [1, 64] (got 0)"},
		{[]string{"calibrate", "--out", out, "--format", "yaml"}, "--format: must be one of table, markdown, csv, json"},
		{[]string{"calibrate", "--out", out, "--device", "1"}, "calibrate: --device: selects a GPU for --backend cuda (got --backend cpu)"},
		{[]string{"calibrate", "--out", out, "--max-working-set", "-1"}, "calibrate: --max-working-set: must be a size in bytes > 0 (got -1)"},
		{[]string{"calibrate", "--out", out, "--rounds", "0"}, "calibrate: --rounds: must be in [1, 20] (got 0)"},
		{[]string{"calibrate", "--out", out, "--rounds", "21"}, "calibrate: --rounds: must be in [1, 20] (got 21)"},
		{[]string{"l2", "--measure", "--backend", "tpu"}, `--backend: must be cpu or cuda (got "tpu")`},
		{[]string{"l2", "--format", "yaml"}, "--format: must be one of table, markdown, csv, json"},
	} {
		if _, err := runCLI(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused calibration wrote its file")
	}
}

// The end-to-end command on this machine, shortened; it prints the summary
// tables and writes a file that loads.
func TestCalibrateCommandQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("measures this machine for a few seconds")
	}
	p := filepath.Join(t.TempDir(), "calib.toml")
	out, err := runCLI(t, "calibrate", "--quick", "--nproc", "2", "--shapes-from", "test/tp2pp2-tiny", "--out", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fp32_flops_per_s", "link_latency_s", "tp2pp2-tiny decode wqkv", "sendrecv", "Compute ops of single-tiny"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if _, err := configs.LoadCalibration(p); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(data), "# partbench calibration: host ") {
		t.Errorf("file starts %q", string(data[:60]))
	}
}

// The calibrated estimate of the tiny configs, logged for
// docs/measurements/cpu-calibration.md (PARTBENCH_CALIBRATION names the
// machine's file; without it the fixed CPU-like profile stands in, so the
// checks always run): the calibration's hardware replaces the preset and
// says so in notes, every figure is finite and positive, TPS is the batch
// over TPOT (sim's definition), the bottleneck is the bound with the most
// time, and the estimate moves.
func TestCalibratedEstimateReport(t *testing.T) {
	p := os.Getenv("PARTBENCH_CALIBRATION")
	if p == "" {
		p = writeTestCalibration(t, cpuLikeCalibration())
	}
	cal, err := configs.LoadCalibration(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"test/tp2pp2-tiny", "test/single-tiny"} {
		cfg, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		var tpots []float64
		for _, file := range []string{"", p} {
			e, notes := estimateWith(t, name, file)
			t.Logf("%s on %s: TTFT %.4g ms, TPOT %.4g ms, TPS %.4g, decode bottleneck %s, by bound %v; notes %q",
				name, e.Hardware, e.Prefill.TTFTS*1e3, e.Decode.TPOTS*1e3, e.Decode.TokensPerS, e.Decode.Bottleneck, e.Decode.TimeByBound, notes)
			want := cfg.Hardware.GPU.Name
			if file != "" {
				want = cal.Hardware.Name
				if len(notes) == 0 {
					t.Errorf("%s with %s: no notes say the calibration was applied", name, file)
				}
			} else if len(notes) != 0 {
				t.Errorf("%s without a calibration: notes %q", name, notes)
			}
			if e.Hardware != want {
				t.Errorf("%s with calibration %q: hardware %q, want %q", name, file, e.Hardware, want)
			}
			for what, v := range map[string]float64{"TTFT": e.Prefill.TTFTS, "TPOT": e.Decode.TPOTS, "TPS": e.Decode.TokensPerS} {
				if !(v > 0) || math.IsInf(v, 0) {
					t.Errorf("%s on %s: %s = %g, want finite and > 0", name, e.Hardware, what, v)
				}
			}
			if got, want := e.Decode.TokensPerS*e.Decode.TPOTS, float64(cfg.Workload.Batch); math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s on %s: TPS × TPOT = %g, want the batch %g", name, e.Hardware, got, want)
			}
			for b, v := range e.Decode.TimeByBound {
				if v > e.Decode.TimeByBound[e.Decode.Bottleneck] {
					t.Errorf("%s on %s: bottleneck %s (%g s) but %s holds %g s", name, e.Hardware, e.Decode.Bottleneck, e.Decode.TimeByBound[e.Decode.Bottleneck], b, v)
				}
			}
			tpots = append(tpots, e.Decode.TPOTS)
		}
		if tpots[0] == tpots[1] {
			t.Errorf("%s: the calibration left TPOT at %g s", name, tpots[0])
		}
	}
}

// calibrate merge writes the pooled profile, loadable by --calibration,
// and refuses an output that is one of its inputs, a single input, a
// missing file and calibrations of different hosts, saying which.
func TestCalibrateMerge(t *testing.T) {
	a, b := cpuLikeCalibration(), cpuLikeCalibration()
	b.Topology.Intra.LatencyS = 20e-6
	b.Info.Date = "2026-01-02T00:00:00Z"
	a.Info.Notes, b.Info.Notes = []string{"measured a"}, []string{"measured b"}
	a.Info.LoadAverage, b.Info.LoadAverage = []float64{0.5, 1}, []float64{0.25, 2}
	pa, pb := writeTestCalibration(t, a), writeTestCalibration(t, b)
	out := filepath.Join(t.TempDir(), "merged.toml")
	msg, err := runCLI(t, "calibrate", "merge", "--output", out, pa, pb)
	if err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	// The tables show the merge's own notes and count the inputs'.
	if !strings.Contains(msg, "merged from 2 calibrations") || !strings.Contains(msg, "2 notes of the calibrations merged") || strings.Contains(msg, "measured a") {
		t.Errorf("output:\n%s", msg)
	}
	got, err := configs.LoadCalibration(out)
	if err != nil {
		t.Fatal(err)
	}
	// Of two, the median is the lower: 20 µs of {30, 20}.
	// The highest load at the start and at the end: 0.5 and 2.
	if la := got.Info.LoadAverage; len(la) != 2 || la[0] != 0.5 || la[1] != 2 || !strings.Contains(strings.Join(got.Info.Notes, "\n"), pa+": measured a") {
		t.Errorf("merged load %v, notes %q", got.Info.LoadAverage, got.Info.Notes)
	}
	if got.Topology.Intra.LatencyS != 20e-6 || got.Info.Date != b.Info.Date || got.Info.Repeats != 10 {
		t.Errorf("merged link %+v, info %+v: want 20 µs, b's date, 10 repeats", got.Topology.Intra, got.Info)
	}
	if _, notes := estimateWith(t, "test/tp2pp2-tiny", out); len(notes) == 0 {
		t.Error("the merged profile applied with no notes")
	}
	c := cpuLikeCalibration()
	c.Info.Cores = 8
	pc := writeTestCalibration(t, c)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--output", pa, pa, pb}, "--output " + pa + ": is the input " + pa},
		{[]string{"--output", out, pa}, "requires at least 2 arg"},
		{[]string{"--output", out, pa, pb + ".missing"}, pb + ".missing"},
		{[]string{"--output", out, pa, pc}, "calibration.cores: " + pa + " has 0, " + pc + " has 8"},
		{[]string{pa, pb}, "--output is required"},
	} {
		msg, err := runCLI(t, append([]string{"calibrate", "merge"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("calibrate merge %q: error %v, want %q\n%s", tc.args, err, tc.want, msg)
		}
	}
	if back, err := configs.LoadCalibration(pa); err != nil || back.Topology.Intra.LatencyS != 30e-6 {
		t.Errorf("input %s after the refusals: %+v, %v", pa, back, err)
	}
}

// calibrate --rounds N measures N times (here a stand-in for the
// measurement, so the test does not depend on the machine), writes each
// round beside --output and the rounds merged into it; a round that fails
// leaves the rounds before it and no merged file.
func TestCalibrateRounds(t *testing.T) {
	latencies := []float64{30e-6, 10e-6, 20e-6}
	calls := 0
	fail := -1 // the call that fails (-1: none)
	saved := calibrateMeasure
	t.Cleanup(func() { calibrateMeasure = saved })
	calibrateMeasure = func(_ context.Context, o calib.Options) (*configs.Calibration, error) {
		defer func() { calls++ }()
		if calls == fail {
			return nil, errors.New("link: rank 1 exited")
		}
		if o.Ranks != 2 || !o.Quick {
			t.Errorf("round %d: options %+v, want the command's --nproc 2 --quick", calls+1, o)
		}
		c := cpuLikeCalibration()
		c.Topology.Intra.LatencyS = latencies[calls%len(latencies)]
		c.Info.Notes = []string{fmt.Sprintf("measured round %d", calls+1)}
		return c, nil
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "calib.toml")
	msg, err := runCLI(t, "calibrate", "--quick", "--nproc", "2", "--rounds", "3", "--output", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	if calls != 3 {
		t.Errorf("%d measurements, want 3", calls)
	}
	for k, lat := range latencies {
		p := filepath.Join(dir, fmt.Sprintf("calib.round-%d.toml", k+1))
		c, err := configs.LoadCalibration(p)
		if err != nil || c.Topology.Intra.LatencyS != lat {
			t.Errorf("round %d: %s: %+v, %v; want latency %g", k+1, p, c, err, lat)
		}
	}
	got, err := configs.LoadCalibration(out)
	if err != nil {
		t.Fatal(err)
	}
	// The median of {30, 10, 20} µs is 20; each round's note under its file.
	if got.Topology.Intra.LatencyS != 20e-6 || !strings.Contains(strings.Join(got.Info.Notes, "\n"), "calib.round-2.toml: measured round 2") {
		t.Errorf("merged latency %g, notes %q; want 20 µs and round 2's note under its name", got.Topology.Intra.LatencyS, got.Info.Notes)
	}
	if !strings.Contains(msg, "merged from 3 calibrations") || !strings.Contains(msg, "3 notes of the calibrations merged") || strings.Contains(msg, "measured round") {
		t.Errorf("output:\n%s", msg)
	}

	// The second round fails: the first stays, nothing claims to be merged.
	dir = t.TempDir()
	out = filepath.Join(dir, "cal")
	calls, fail = 0, 1
	_, err = runCLI(t, "calibrate", "--quick", "--nproc", "2", "--rounds", "3", "--output", out)
	want := "calibrate: round 2 of 3: link: rank 1 exited (the rounds before it are in " + filepath.Join(dir, "cal.round-1.toml") + "; --output " + out + " was not written)"
	if err == nil || err.Error() != want {
		t.Errorf("failing round: error %v, want %q", err, want)
	}
	if _, err := configs.LoadCalibration(filepath.Join(dir, "cal.round-1.toml")); err != nil {
		t.Errorf("round 1 after round 2 failed: %v", err)
	}
	for _, p := range []string{out, filepath.Join(dir, "cal.round-2.toml")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written though round 2 failed", p)
		}
	}
}

// calibrate diff lists the figures that differ beyond --threshold, B over
// A, and refuses a threshold that is no fraction.
func TestCalibrateDiff(t *testing.T) {
	a, b := cpuLikeCalibration(), cpuLikeCalibration()
	b.Topology.Intra.LatencyS = 20e-6  // ×0.667
	b.Hardware.KernelLaunchS = 1.55e-7 // ×1.033: within 10 %
	pa, pb := writeTestCalibration(t, a), writeTestCalibration(t, b)
	out, err := runCLI(t, "calibrate", "diff", pa, pb, "--format", "csv")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "topology.intra_node.latency_s,3e-05,2e-05,0.667") || strings.Contains(out, "kernel_launch_s,") {
		t.Errorf("output:\n%s", out)
	}
	if out, err := runCLI(t, "calibrate", "diff", pa, pb); err != nil || !strings.Contains(out, "1 more figures differ by 0.1 or less") {
		t.Errorf("table: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "calibrate", "diff", pa, pb, "--threshold", "-1"); err == nil || !strings.Contains(err.Error(), "--threshold: must be a finite fraction ≥ 0 (got -1)") {
		t.Errorf("threshold -1: %v", err)
	}
}
