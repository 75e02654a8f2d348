package configs

import "testing"

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
