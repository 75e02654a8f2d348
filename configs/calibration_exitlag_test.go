package configs

import "testing"

// The exit lags are kept like the core wait: measured at 4 ranks on 2
// cores, both kinds are kept for tp2pp2-tiny (4 ranks) and dropped for
// layerwise16-tiny (16); both are communication kinds.
func TestCalibrationApplyExitLag(t *testing.T) {
	kinds := []string{CoreExitLagKind, CoreExitLagIdleKind}
	for _, k := range kinds {
		if !IsCommKind(k) || !isWaitKind(k) {
			t.Fatalf("%s: comm kind %t, wait kind %t, want both", k, IsCommKind(k), isWaitKind(k))
		}
	}
	for _, c := range []struct {
		config string
		kept   int
	}{{"test/tp2pp2-tiny", 2}, {"test/layerwise16-tiny", 0}} {
		cal := sampleCalibration() // 2 cores
		cal.OpTimes = sampleOpTimes()
		for _, k := range kinds {
			cal.OpTimes = append(cal.OpTimes, OpTime{Kind: k, Shape: CoreWaitShape(2), Size: 4096, Context: 25_000, TimeS: 50e-6, TimeMinS: 40e-6, TimeMaxS: 60e-6, Samples: 3, Ranks: 4})
		}
		cfg, err := Load(c.config)
		if err != nil {
			t.Fatal(err)
		}
		cal.Apply(cfg)
		kept := 0
		for _, ot := range cfg.Hardware.OpTimes {
			if (ot.Kind == CoreExitLagKind || ot.Kind == CoreExitLagIdleKind) && ot.Ranks == 4 && ot.Context == 25_000 {
				kept++
			}
		}
		if kept != c.kept {
			t.Errorf("%s: %d exit-lag entries measured at 4 kept, want %d", c.config, kept, c.kept)
		}
	}
}
