package configs

import (
	"strings"
	"testing"
)

// Entries taken in turns at 4 and at 16 ranks (2 cores): tp2pp2-tiny (4
// ranks) keeps the two at 4 with a note, layerwise16-tiny (16) the one at
// 16; single-tiny (1 rank on the 2 cores: nobody waits its turn for a core)
// keeps none and says nothing of them; tp4-tiny priced on a profile with
// turns at 16 only keeps none, with a note naming 16 and the --op-ranks to
// add. Every other entry is picked as without them (sampleOpTimes' gemm at
// 4 for tp2pp2-tiny).
func TestCalibrationApplyTurns(t *testing.T) {
	turn := func(ranks int, size int64) OpTime {
		return OpTime{Kind: TurnsKind("gemm"), Shape: "n=4 k=4", Size: size, TimeS: 2e-6, TimeMinS: 2e-6, TimeMaxS: 2e-6, Samples: 1, Ranks: ranks}
	}
	for _, c := range []struct {
		config   string
		measured []int
		kept     int // entries in turns kept, all at the config's ranks
		note     string
	}{
		{"test/tp2pp2-tiny", []int{4, 16}, 2, "2 compute op times measured with the 4 ranks taking turns price the ops of a rank computing alone"},
		{"test/layerwise16-tiny", []int{4, 16}, 1, "1 compute op times measured with the 16 ranks taking turns"},
		{"test/single-tiny", []int{4, 16}, 0, ""},
		{"test/tp4-tiny", []int{16}, 0, "note: the profile's compute op times taken in turns were measured at [16] ranks, not the config's 4: compute ops are priced from those measured at once (calibrate with --op-ranks including 4)"},
	} {
		cal := sampleCalibration() // 2 cores
		cal.OpTimes = sampleOpTimes()
		cal.Info.OpTimeProcesses = true
		for _, n := range c.measured {
			cal.OpTimes = append(cal.OpTimes, turn(n, 4))
			if n == 4 {
				cal.OpTimes = append(cal.OpTimes, turn(n, 8))
			}
		}
		cfg, err := Load(c.config)
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(cal.Apply(cfg), "\n")
		kept, ranks := 0, cfg.Parallel.TP*max(1, cfg.Parallel.PP)*max(1, cfg.Parallel.DP)
		for _, e := range cfg.Hardware.OpTimes {
			if IsTurnsKind(e.Kind) {
				kept++
				if e.Ranks != ranks {
					t.Errorf("%s: kept %+v, measured at %d ranks, not the config's %d", c.config, e, e.Ranks, ranks)
				}
			}
		}
		if kept != c.kept || (c.note != "" && !strings.Contains(notes, c.note)) || (c.note == "" && strings.Contains(notes, "turns")) || strings.Contains(notes, "turns:gemm (measured") {
			t.Errorf("%s, in turns at %v: kept %d (want %d), notes %q (want %q)", c.config, c.measured, kept, c.kept, notes, c.note)
		}
	}
}
