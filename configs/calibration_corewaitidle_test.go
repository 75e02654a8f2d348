package configs

import (
	"strings"
	"testing"
)

// The wait beside idle ranks is a wait like the core wait: measured at 4
// ranks on 2 cores it is kept for tp2pp2-tiny (4 ranks) and dropped for
// layerwise16-tiny (16), and it is a communication kind (picked at the
// comm ranks, never priced as a compute op).
func TestCalibrationApplyCoreWaitIdle(t *testing.T) {
	if !IsCommKind(CoreWaitIdleKind) || !isWaitKind(CoreWaitIdleKind) {
		t.Fatalf("%s: comm kind %t, wait kind %t, want both", CoreWaitIdleKind, IsCommKind(CoreWaitIdleKind), isWaitKind(CoreWaitIdleKind))
	}
	for _, c := range []struct {
		config string
		kept   bool
	}{{"test/tp2pp2-tiny", true}, {"test/layerwise16-tiny", false}} {
		cal := sampleCalibration() // 2 cores
		cal.OpTimes = append(sampleOpTimes(), OpTime{Kind: CoreWaitIdleKind, Shape: CoreWaitShape(2), Size: 6000, TimeS: 4e-6, TimeMinS: 3e-6, TimeMaxS: 5e-6, Samples: 3, Ranks: 4})
		cfg, err := Load(c.config)
		if err != nil {
			t.Fatal(err)
		}
		cal.Apply(cfg)
		kept := false
		for _, ot := range cfg.Hardware.OpTimes {
			kept = kept || (ot.Kind == CoreWaitIdleKind && ot.Ranks == 4 && ot.TimeS == 4e-6)
		}
		if kept != c.kept {
			t.Errorf("%s: the wait beside idle ranks measured at 4 kept %t, want %t", c.config, kept, c.kept)
		}
	}
}

// The hand-off taken in turns is kept as the other entries taken in
// turns, at its count only (measured at 16: layerwise16-tiny keeps it,
// tp2pp2-tiny does not), and is not counted among the compute op times
// the note names (alone it makes no such note).
func TestCalibrationApplyHandOff(t *testing.T) {
	for _, c := range []struct {
		config string
		kept   bool
	}{{"test/layerwise16-tiny", true}, {"test/tp2pp2-tiny", false}} {
		cal := sampleCalibration() // 2 cores
		cal.OpTimes = append(sampleOpTimes(), OpTime{Kind: TurnsKind(HandOffKind), Shape: CoreWaitShape(2), Size: 1, TimeS: 2e-5, TimeMinS: 1e-5, TimeMaxS: 3e-5, Samples: 16, Ranks: 16})
		cfg, err := Load(c.config)
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(cal.Apply(cfg), "\n")
		kept := false
		for _, ot := range cfg.Hardware.OpTimes {
			kept = kept || (ot.Kind == TurnsKind(HandOffKind) && ot.Ranks == 16)
		}
		if kept != c.kept || strings.Contains(notes, "compute op times measured with the") {
			t.Errorf("%s: hand-off measured at 16 kept %t (want %t); notes %q (want none counting it as a compute op time)", c.config, kept, c.kept, notes)
		}
	}
}
