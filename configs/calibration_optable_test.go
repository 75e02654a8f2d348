package configs

import (
	"reflect"
	"strings"
	"testing"
)

func sampleOpTimes() []OpTime {
	return []OpTime{
		{Kind: "gemm", Shape: "n=64 k=64 bias=false", Size: 4, TimeS: 2e-6, TimeMinS: 1.5e-6, TimeMaxS: 3e-6, Samples: 5, Ranks: 1},
		{Kind: "attention", Shape: "seqs=4 heads=8 kv_heads=4 head_dim=8 rope=true bidirectional=false", Size: 1, Context: 22, TimeS: 9e-6, TimeMinS: 8e-6, TimeMaxS: 1e-5, Samples: 5, Ranks: 1},
		{Kind: "gemm", Shape: "n=64 k=64 bias=false", Size: 4, TimeS: 5e-6, TimeMinS: 4e-6, TimeMaxS: 6e-6, Samples: 5, Ranks: 4},
		{Kind: "all_reduce", Shape: "ranks=2", Size: 512, TimeS: 4e-5, TimeMinS: 3e-5, TimeMaxS: 6e-5, Samples: 5, Ranks: 4},
	}
}

func TestCalibrationOpTimesRoundTrip(t *testing.T) {
	want := sampleCalibration()
	want.OpTimes = sampleOpTimes()
	p := writeCalibration(t, want)
	got, err := LoadCalibration(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.OpTimes, want.OpTimes) {
		t.Errorf("op times changed in the round trip:\ngot  %+v\nwant %+v", got.OpTimes, want.OpTimes)
	}
}

func TestValidateOpTimes(t *testing.T) {
	bad := sampleOpTimes()
	bad[0].Size = 0
	bad[1].TimeS = -1
	bad[3].Ranks = 0
	bad = append(bad, sampleOpTimes()[2]) // the same entry twice
	err := ValidateOpTimes("op_time", bad)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"op_time[0].size: must be ≥ 1 (got 0)",
		"op_time[1].time_s: must be a positive, finite time in seconds (got -1)",
		"op_time[3].ranks: must be ≥ 1 (got 0)",
		"op_time[4]: same kind, shape, size, context and ranks as op_time[2]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := ValidateOpTimes("op_time", sampleOpTimes()); err != nil {
		t.Errorf("valid entries: %v", err)
	}
}

func TestOpTimesFor(t *testing.T) {
	ts := sampleOpTimes() // gemm at 1 and 4 ranks; attention at 1; all_reduce at 4
	for _, c := range []struct {
		compute, comm int
		want          []int // the indices of ts taken
		off           string
	}{
		{1, 1, []int{0, 1, 3}, "all_reduce (measured at 4)"},
		{4, 4, []int{1, 2, 3}, "attention (measured at 1)"},
		{1, 4, []int{0, 1, 3}, ""},                                                                            // compute at 1, the link at 4: all measured there
		{2, 2, []int{0, 1, 3}, "gemm (measured at 1), attention (measured at 1), all_reduce (measured at 4)"}, // gemm: |1−2| < |4−2|
		{3, 3, []int{1, 2, 3}, "attention (measured at 1), gemm (measured at 4), all_reduce (measured at 4)"},
	} {
		got, off := OpTimesFor(ts, c.compute, c.comm)
		var want []OpTime
		for _, i := range c.want {
			want = append(want, ts[i])
		}
		if !reflect.DeepEqual(got, want) || strings.Join(off, ", ") != c.off {
			t.Errorf("compute %d, comm %d: %+v (off %q), want %+v (off %q)", c.compute, c.comm, got, off, want, c.off)
		}
	}
	if got, off := OpTimesFor(nil, 4, 4); got != nil || off != nil {
		t.Errorf("no entries: %v, %v", got, off)
	}
}

// ConcurrentRanks: TP × DP × min(PP, micro-batches), at most the ranks per host.
func TestConcurrentRanks(t *testing.T) {
	for _, c := range []struct {
		name    string
		perHost int
		want    int
	}{
		{"test/single-tiny", 1, 1},
		{"test/tp2pp2-tiny", 4, 4},      // 2 × 1 × min(2, 2)
		{"test/pp4-tiny", 4, 4},         // 1 × 1 × min(4, 4)
		{"test/tp2-dp2-tiny", 4, 4},     // 2 × 2 × min(1, 2)
		{"test/layerwise16-tiny", 8, 1}, // 1 × 1 × min(16, 1): one stage busy at a time
		{"test/tp4-tiny", 2, 2},         // 4, but only 2 ranks on the host
	} {
		cfg, err := Load(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := ConcurrentRanks(cfg, c.perHost); got != c.want {
			t.Errorf("%s with %d per host: %d, want %d", c.name, c.perHost, got, c.want)
		}
	}
}

// Apply gives a CPU config its compute op times measured uncontended (sim
// shares the host's cores among the ranks computing at once) and its
// communication measured among its ranks per host; without the host's
// cores it takes compute at the ranks that compute at once, and warns where
// the profile has no entries at that placement.
func TestCalibrationApplyOpTimes(t *testing.T) {
	cal := sampleCalibration() // 2 cores
	cal.OpTimes = sampleOpTimes()
	cfg, err := Load("test/tp2pp2-tiny") // 4 ranks on one host, 4 computing at once
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(cal.Apply(cfg), "\n")
	want := []OpTime{cal.OpTimes[0], cal.OpTimes[1], cal.OpTimes[3]} // gemm and attention at 1, all_reduce at 4
	if !reflect.DeepEqual(cfg.Hardware.OpTimes, want) || cfg.Hardware.HostCores != 2 || strings.Contains(notes, "warning") ||
		!strings.Contains(notes, "the 4 ranks per host share its 2 cores") {
		t.Errorf("tp2pp2-tiny: op times %+v, host cores %d, notes %q", cfg.Hardware.OpTimes, cfg.Hardware.HostCores, notes)
	}

	cal.Info.Cores = 0 // cores unknown: compute at the 4 ranks computing at once
	cfg, _ = Load("test/tp2pp2-tiny")
	notes = strings.Join(cal.Apply(cfg), "\n")
	if len(cfg.Hardware.OpTimes) != 3 || cfg.Hardware.OpTimes[1].Ranks != 4 || cfg.Hardware.HostCores != 0 ||
		!strings.Contains(notes, "warning: the profile has no op times measured at this config's placement (4 computing at once, 4 ranks per host) for attention (measured at 1)") {
		t.Errorf("tp2pp2-tiny without cores: op times %+v, notes %q", cfg.Hardware.OpTimes, notes)
	}

	// 1 rank: gemm and attention at 1; the 2-rank all_reduce is no group of
	// a one-rank config (not taken), which has no communication to warn
	// about, and no cores to share.
	cal.Info.Cores = 2
	cfg, _ = Load("test/single-tiny")
	notes = strings.Join(cal.Apply(cfg), "\n")
	if len(cfg.Hardware.OpTimes) != 2 || cfg.Hardware.OpTimes[0].Ranks != 1 || strings.Contains(notes, "warning") || strings.Contains(notes, "share its") {
		t.Errorf("single-tiny: op times %+v, notes %q", cfg.Hardware.OpTimes, notes)
	}
}

// A profile calibrated up to 16 ranks holds collectives over 16 ranks,
// measured at 16 only: a 4-rank config has no group that large, so it
// neither takes them nor is warned that its placement (4 ranks) was not
// measured for them; a group it does have, measured at another placement
// only, is still warned about.
func TestCalibrationApplyIgnoresLargerGroups(t *testing.T) {
	cal := sampleCalibration() // 2 cores
	ar16 := OpTime{Kind: "all_reduce", Shape: "ranks=16", Size: 512, TimeS: 9e-5, TimeMinS: 8e-5, TimeMaxS: 1e-4, Samples: 5, Ranks: 16}
	cal.OpTimes = append(sampleOpTimes(), ar16)
	cfg, err := Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(cal.Apply(cfg), "\n")
	want := []OpTime{cal.OpTimes[0], cal.OpTimes[1], cal.OpTimes[3]} // as without the 16-rank entry
	if !reflect.DeepEqual(cfg.Hardware.OpTimes, want) || strings.Contains(notes, "warning") {
		t.Errorf("tp2pp2-tiny with a 16-rank all_reduce in the profile: op times %+v, notes %q", cfg.Hardware.OpTimes, notes)
	}
	// The 2-rank all_reduce measured at 16 only: tp2pp2 uses that group,
	// priced at another placement, and says so.
	ar2at16 := cal.OpTimes[3]
	ar2at16.Ranks = 16
	cal.OpTimes = []OpTime{cal.OpTimes[0], cal.OpTimes[1], ar2at16, ar16}
	cfg, _ = Load("test/tp2pp2-tiny")
	notes = strings.Join(cal.Apply(cfg), "\n")
	if !strings.Contains(notes, "for all_reduce (measured at 16)") || len(cfg.Hardware.OpTimes) != 3 {
		t.Errorf("tp2pp2-tiny with its group measured at 16 only: op times %+v, notes %q", cfg.Hardware.OpTimes, notes)
	}
}

// A GPU calibration's op times are of the dtype they were measured in: a
// config in that dtype takes them, one in another is priced by the
// roofline and told why; the dtype round-trips through the file.
func TestCalibrationOpTimesKeepTheirDType(t *testing.T) {
	cal := sampleCalibration()
	cal.Info.Backend, cal.Info.OpTimeDType, cal.Info.Device, cal.Info.Driver = BackendCUDA, "fp32", "Fake H100 0", "CUDA driver 13.0"
	cal.OpTimes = sampleOpTimes()[:2]
	back, err := LoadCalibration(writeCalibration(t, cal))
	if err != nil {
		t.Fatal(err)
	}
	if back.Info.OpTimeDType != "fp32" || back.Info.Device != "Fake H100 0" || back.Info.Driver != "CUDA driver 13.0" {
		t.Errorf("info after the round trip %+v", back.Info)
	}
	cfg, err := Load("test/single-tiny") // fp32
	if err != nil {
		t.Fatal(err)
	}
	back.Apply(cfg)
	if len(cfg.Hardware.OpTimes) != 2 {
		t.Errorf("fp32 config: %d op times, want 2", len(cfg.Hardware.OpTimes))
	}
	cfg, _ = Load("test/single-tiny")
	cfg.Model.DType = "fp16"
	notes := strings.Join(back.Apply(cfg), "\n")
	if len(cfg.Hardware.OpTimes) != 0 || !strings.Contains(notes, "op times were measured in fp32, the config computes in fp16") {
		t.Errorf("fp16 config: %d op times, notes %q", len(cfg.Hardware.OpTimes), notes)
	}
}

// A GPU profile's op times, measured on one GPU, price every rank of a
// multi-GPU config with no warning about placement: each rank has its own
// GPU.
func TestCUDAOpTimesHoldForEveryRank(t *testing.T) {
	cal := sampleCalibration()
	cal.Info.Backend = BackendCUDA
	cal.OpTimes = sampleOpTimes()[:2] // measured at 1 rank
	cfg, err := Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(cal.Apply(cfg), "\n")
	if len(cfg.Hardware.OpTimes) != 2 || strings.Contains(notes, "warning") {
		t.Errorf("%d op times, notes %q", len(cfg.Hardware.OpTimes), notes)
	}
}

// A config's own [[hardware.op_time]] table is checked as a calibration's
// is, each problem named by its path in the config.
func TestConfigOpTimesValidated(t *testing.T) {
	base, err := Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	good := *base
	good.Hardware.OpTimes = sampleOpTimes()
	if err := good.Validate(); err != nil {
		t.Fatalf("valid table refused: %v", err)
	}
	bad := *base
	bad.Hardware.OpTimes = sampleOpTimes()
	bad.Hardware.OpTimes[1].TimeS = -1
	bad.Hardware.OpTimes = append(bad.Hardware.OpTimes, bad.Hardware.OpTimes[0]) // a duplicate entry
	bad.Hardware.HostCores = -2
	err = bad.Validate()
	for _, want := range []string{"hardware.op_time[1].time_s: must be a positive, finite time", "hardware.op_time[4]", "hardware.host_cores: must be ≥ 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// A core wait prices only the placement it was measured at: tp2pp2-tiny
// puts 4 ranks on the 2-core host, so a wait measured at 4 ranks is kept
// (with a note), one measured at 2 is dropped with a warning naming both
// counts, and a 1-rank config on 2 cores (nothing outnumbered) keeps none.
// layerwise16-tiny's topology is two nodes of 8, but the shared-core
// stretch puts all 16 ranks on the host's cores, and so does the wait:
// measured at 16 it is kept, at 4 and 8 it is not.
func TestCalibrationApplyCoreWait(t *testing.T) {
	wait := func(ranks int) OpTime {
		return OpTime{Kind: CoreWaitKind, Shape: CoreWaitShape(2), Size: 1, TimeS: 1e-5, TimeMinS: 1e-5, TimeMaxS: 1e-5, Samples: 1, Ranks: ranks}
	}
	hasWait := func(ts []OpTime) bool {
		for _, t := range ts {
			if t.Kind == CoreWaitKind {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		config   string
		measured int
		kept     bool
		note     string
	}{
		{"test/tp2pp2-tiny", 4, true, "collectives are charged the partners' scheduling delay and blocking receives the receive wait, as measured at 4 ranks"},
		{"test/tp2pp2-tiny", 2, false, "warning: the config's 4 ranks outnumber the host's 2 cores but the profile's core wait was measured at [2] ranks, not 4: it is not used"},
		{"test/single-tiny", 4, false, ""},
		{"test/layerwise16-tiny", 16, true, "as measured at 16 ranks"},
		{"test/layerwise16-tiny", 8, false, "measured at [8] ranks, not 16"},
	} {
		cal := sampleCalibration() // 2 cores
		second := wait(c.measured) // a second burst length: the count is named once
		second.Size = 2
		cal.OpTimes = append(sampleOpTimes(), wait(c.measured), second)
		cfg, err := Load(c.config)
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(cal.Apply(cfg), "\n")
		if hasWait(cfg.Hardware.OpTimes) != c.kept || (c.note != "" && !strings.Contains(notes, c.note)) || (c.note == "" && strings.Contains(notes, "core wait")) {
			t.Errorf("%s, wait measured at %d: kept %t (want %t), notes %q (want %q)", c.config, c.measured, hasWait(cfg.Hardware.OpTimes), c.kept, notes, c.note)
		}
	}
}

// A core wait measured with the ranks filling the cores (4 on 4) is kept
// for a config of exactly that many ranks (tp4-tiny), with a note that
// says so; a 1-rank config on the 4 cores keeps none.
func TestCalibrationApplyCoreWaitAtCores(t *testing.T) {
	for _, c := range []struct {
		config string
		kept   bool
	}{{"test/tp4-tiny", true}, {"test/single-tiny", false}} {
		cal := sampleCalibration()
		cal.Info.Cores = 4
		cal.OpTimes = append(sampleOpTimes(), OpTime{Kind: CoreWaitKind, Shape: CoreWaitShape(4), Size: 1, TimeS: 1e-5, TimeMinS: 1e-5, TimeMaxS: 1e-5, Samples: 1, Ranks: 4})
		cfg, err := Load(c.config)
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(cal.Apply(cfg), "\n")
		kept := false
		for _, ot := range cfg.Hardware.OpTimes {
			kept = kept || ot.Kind == CoreWaitKind
		}
		if kept != c.kept || (c.kept && !strings.Contains(notes, "the config's 4 ranks fill the host's 4 cores")) {
			t.Errorf("%s: core wait kept %t (want %t), notes %q", c.config, kept, c.kept, notes)
		}
	}
}

// A CPU profile whose op times at more than one rank were measured by
// process ranks prices a config's compute at its ranks per host: tp2pp2-tiny
// (4 ranks on one host) takes sampleOpTimes' gemm measured at 4 (index 2)
// and, since attention was measured at 1 only, attention at 1 with a
// warning naming it; the all_reduce at 4. layerwise16-tiny (its preset
// topology: 2 hosts of 8 ranks; a CPU calibration prices all 16 on the
// calibrated host's cores, as a local run places them, and says so) finds
// no compute at 16 and falls back to the times measured alone, with
// a note naming the count and the --op-ranks to calibrate with. The flag
// round-trips through the file.
func TestCalibrationApplyOpTimesAtPlacement(t *testing.T) {
	cal := sampleCalibration() // 2 cores
	cal.OpTimes = sampleOpTimes()
	cal.Info.OpTimeProcesses = true
	got, err := LoadCalibration(writeCalibration(t, cal))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Info.OpTimeProcesses {
		t.Fatal("op_time_processes lost in the round trip")
	}
	cfg, _ := Load("test/tp2pp2-tiny")
	notes := strings.Join(got.Apply(cfg), "\n")
	want := []OpTime{cal.OpTimes[1], cal.OpTimes[2], cal.OpTimes[3]}
	if !reflect.DeepEqual(cfg.Hardware.OpTimes, want) || cfg.Hardware.HostCores != 2 ||
		!strings.Contains(notes, "compute ops are priced from the op times measured with 4 processes computing at once on the host's 2 cores") ||
		!strings.Contains(notes, "for attention (measured at 1)") {
		t.Errorf("tp2pp2-tiny: op times %+v, notes %q", cfg.Hardware.OpTimes, notes)
	}

	cfg, _ = Load("test/layerwise16-tiny")
	notes = strings.Join(got.Apply(cfg), "\n")
	if len(cfg.Hardware.OpTimes) != 3 || cfg.Hardware.OpTimes[0].Ranks != 1 ||
		!strings.Contains(notes, "the config's 16 ranks are priced on the calibrated host's 2 cores, all local ranks (its topology puts 8 on a host)") ||
		!strings.Contains(notes, "note: the profile has no compute op times measured by 16 processes at once (the config's ranks per host): compute ops are priced from those measured alone (calibrate with --op-ranks including 16)") {
		t.Errorf("layerwise16-tiny: op times %+v, notes %q", cfg.Hardware.OpTimes, notes)
	}
}
