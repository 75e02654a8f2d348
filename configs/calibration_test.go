package configs

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/topology"
)

// sampleCalibration is a profile with every field set, including awkward
// values (a float without a fraction, a string with quotes and non-ASCII).
func sampleCalibration() *Calibration {
	link := topology.Link{Class: topology.Network, Name: `TCP "loopback" × 4`, BytesPerS: 2.812e8, LatencyS: 3.186e-05}
	return &Calibration{
		Hardware: topology.GPU{Name: "cpu:AMD EPYC", FP32FLOPsPerS: 1.525e10, FP16FLOPsPerS: 1.525e10, BF16FLOPsPerS: 1.525e10,
			HBMBytes: 25275527168, HBMReservedBytes: 3 << 30, HBMBytesPerS: 4.389e10, L2Bytes: 33554432, L2UsableFraction: 1,
			L2BytesPerS: 6.869e10, SMs: 2, SharedMemPerSM: 49152, KernelLaunchS: 1.523e-07, ComputeEfficiency: 1, HBMEfficiency: 1},
		Topology: topology.Topology{Name: "cpu-loopback-4", Nodes: 1, GPUsPerNode: 4, Intra: link},
		Spread: map[string]Spread{
			"fp32_flops_per_s": {Min: 1.52e10, Median: 1.525e10, Max: 1.555e10, N: 5},
			"l2_bytes":         {Min: 370688, Median: 33554432, Max: 189812480, N: 5},
			"link_latency_s":   {Min: 2.916e-05, Median: 3.186e-05, Max: 3.481e-05, N: 5},
		},
		Info: CalibrationInfo{Host: "h", CPU: "AMD EPYC", Cores: 2, Backend: BackendCPU, Date: "2026-01-02T03:04:05Z",
			Version: "dev", Ranks: 4, Repeats: 5, Notes: []string{"a note with \"quotes\" and ≥"},
			LoadAverage: []float64{0.25, 3.5}, Warnings: []string{"the machine was busy"}},
		GEMM: []GEMMSample{{Source: "tp2pp2-tiny decode wqkv", M: 2, N: 64, K: 64, MeasuredM: 2, MeasuredN: 64, FLOPs: 16384,
			TimeMinS: 1e-6, TimeMedianS: 1.5e-6, TimeMaxS: 2e-6, FLOPsPerS: 1.09e10, ModelTimeS: 1.1e-6}},
		Cache: []CacheSample{{Bytes: 16384, BytesPerSMin: 8e10, BytesPerSMedian: 1e11, BytesPerSMax: 1.05e11, ReuseOverStream: 2.3}},
		Comm:  []CommSample{{Op: "all_reduce", Ranks: 4, Bytes: 16, TimeMinS: 1e-4, TimeMedianS: 2e-4, TimeMaxS: 3e-4, ModelTimeS: 1.9e-4, Algo: "ring", Proto: "LL"}},
		Ops:   []OpSample{{Config: "single-tiny", Phase: "decode", Kind: "gemm", Calls: 33, MeasuredS: 2e-4, ModelS: 1.6e-4}},
	}
}

func writeCalibration(t *testing.T, c *Calibration) string {
	t.Helper()
	var b bytes.Buffer
	if err := c.WriteTOML(&b, []string{"partbench calibration: test"}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "calib.toml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCalibrationRoundTrip(t *testing.T) {
	want := sampleCalibration()
	want.Comments = map[string]string{"hardware.sms": "logical CPUs", "spread.l2_bytes": "each repeat"}
	p := writeCalibration(t, want)
	got, err := LoadCalibration(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != p {
		t.Errorf("source %q, want %q", got.Source, p)
	}
	got.Source, want.Comments = "", nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the calibration:\ngot  %+v\nwant %+v", got, want)
	}
}

// Every field of the hardware schema is written, so a field added to
// topology.GPU cannot be silently dropped from calibration files.
func TestCalibrationWritesEveryHardwareField(t *testing.T) {
	var b bytes.Buffer
	if err := sampleCalibration().WriteTOML(&b, nil); err != nil {
		t.Fatal(err)
	}
	hw := b.String()[strings.Index(b.String(), "[hardware]"):strings.Index(b.String(), "[topology]")]
	ty := reflect.TypeOf(topology.GPU{})
	for i := 0; i < ty.NumField(); i++ {
		key := strings.Split(ty.Field(i).Tag.Get("toml"), ",")[0]
		if !strings.Contains(hw, "\n"+key+" = ") {
			t.Errorf("[hardware] lacks %s", key)
		}
	}
	for _, want := range []string{"[spread.fp32_flops_per_s]", "[spread.l2_bytes]", "[spread.link_latency_s]", "min = ", "median = ", "max = ",
		"[topology.intra_node]", "[[gemm]]", "[[cache]]", "[[comm]]", "[[op]]"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("written calibration lacks %q", want)
		}
	}
}

func TestCalibrationStrictErrorsNameTheKey(t *testing.T) {
	good := func() string {
		var b bytes.Buffer
		if err := sampleCalibration().WriteTOML(&b, nil); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}()
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"misspelt hardware key", "fp32_flops_per_s = ", "fp32_flop_per_s = ", "unknown key hardware.fp32_flop_per_s"},
		{"unknown link key", "latency_s = ", "latency_us = ", "unknown key topology.intra_node.latency_us"},
		{"unknown spread figure", "[spread.l2_bytes]", "[spread.l2_size]", "spread.l2_size: unknown figure"},
		{"spread out of order", "min = 370688.0", "min = 1e12", "spread.l2_bytes: must have finite min ≤ median ≤ max"},
		{"invalid hardware value", "l2_bytes = 33554432", "l2_bytes = 0", "hardware.l2_bytes: must be a positive finite number"},
		{"invalid link value", "bytes_per_s = 2.812e+08", "bytes_per_s = -1.0", "topology.intra_node.bytes_per_s"},
		{"ranks disagree", "ranks = 4", "ranks = 3", "calibration.ranks: must equal topology nodes × gpus_per_node = 4 (got 3)"},
		{"unknown backend", `backend = "cpu"`, `backend = "tpu"`, `calibration.backend: must be "cpu" or "cuda" (got "tpu")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.old) {
				t.Fatalf("the written file has no %q to replace", c.old)
			}
			_, err := ParseCalibration(strings.NewReader(strings.Replace(good, c.old, c.new, 1)), "calib.toml")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "calib.toml: ") {
				t.Errorf("error %v, want one naming %q after the file", err, c.want)
			}
		})
	}
	if _, err := LoadCalibration(filepath.Join(t.TempDir(), "none.toml")); err == nil || !strings.Contains(err.Error(), "read calibration") {
		t.Errorf("missing file: %v", err)
	}
}

func TestCalibrationApply(t *testing.T) {
	cal := sampleCalibration()
	cal.Source = "calib.toml"
	link := cal.Topology.Intra

	// Four measured ranks, a four-rank config on one node: both links
	// become the measured one, the node layout stays.
	cfg, err := Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	notes := cal.Apply(cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Hardware.CalibratedBackend != cal.Info.Backend || cal.Info.Backend == "" {
		t.Errorf("calibrated backend %q, want the calibration's %q", cfg.Hardware.CalibratedBackend, cal.Info.Backend)
	}
	if cfg.Hardware.GPU != cal.Hardware || cfg.Topology.Intra != link || cfg.Topology.Inter != link ||
		cfg.Topology.Nodes != 1 || cfg.Topology.GPUsPerNode != 4 || cfg.Topology.Name != "local-1x4" {
		t.Errorf("applied: hardware %+v topology %+v", cfg.Hardware.GPU, cfg.Topology)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], `"H100-SXM5-80GB" replaced by the calibrated profile "cpu:AMD EPYC"`) ||
		!strings.Contains(notes[1], "links replaced") {
		t.Errorf("notes %q", notes)
	}

	// The seed's 16 ranks on two nodes: more ranks than measured, so the one
	// link stands for both, and the notes say so.
	cfg, _ = Load("tp8pp2")
	notes = cal.Apply(cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Topology.Nodes != 2 || cfg.Topology.GPUsPerNode != 8 || cfg.Topology.Intra != link || cfg.Topology.Inter != link {
		t.Errorf("applied to tp8pp2: topology %+v", cfg.Topology)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "measured 4 ranks, the config has 16") {
		t.Errorf("notes %q do not say the link is extrapolated", notes)
	}

	// One measured rank: no link, the config keeps its own.
	one := sampleCalibration()
	one.Topology = topology.Topology{Name: "cpu-loopback-1", Nodes: 1, GPUsPerNode: 1}
	one.Info.Ranks = 1
	cfg, _ = Load("test/tp2pp2-tiny")
	before := cfg.Topology
	notes = one.Apply(cfg)
	if cfg.Topology != before || !strings.Contains(strings.Join(notes, "\n"), "measured no link") {
		t.Errorf("one-rank calibration changed the topology to %+v (notes %q)", cfg.Topology, notes)
	}
}

// RequestOverhead: a given flag wins; without one, the file's measurement;
// without a file, the (default) flag value; an unreadable file is an error.
func TestRequestOverhead(t *testing.T) {
	if v, err := RequestOverhead(5e-3, true, "/nonexistent.toml"); err != nil || v != 5e-3 {
		t.Errorf("given: %g %v", v, err)
	}
	if v, err := RequestOverhead(0, false, ""); err != nil || v != 0 {
		t.Errorf("no file: %g %v", v, err)
	}
	if _, err := RequestOverhead(0, false, filepath.Join(t.TempDir(), "none.toml")); err == nil || !strings.HasPrefix(err.Error(), "--calibration:") {
		t.Errorf("missing file: %v", err)
	}
}

// A calibration file's comm sample names its algorithm with
// commcount.ParseAlgorithm's names: an unknown one is refused with the
// file, the key and the value.
func TestCalibrationUnknownAlgo(t *testing.T) {
	var b bytes.Buffer
	if err := sampleCalibration().WriteTOML(&b, nil); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, `algo = "ring"`) {
		t.Fatalf("written calibration lacks algo = \"ring\":\n%s", text)
	}
	_, err := ParseCalibration(strings.NewReader(strings.Replace(text, `algo = "ring"`, `algo = "butterfly"`, 1)), "calib.toml")
	if err == nil {
		t.Fatal("algo = \"butterfly\" accepted")
	}
	// The decoder's error gives file:line:column and echoes the line, key
	// and all, labelled a value's error: the text itself parses.
	for _, w := range []string{"calib.toml:", ": invalid value: ", `algo = "butterfly"`, `unknown collective algorithm "butterfly"`, "allowed: ring, tree"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "syntax error") {
		t.Errorf("a refused value reported as a syntax error: %v", err)
	}
}
