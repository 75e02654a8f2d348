package configs

import (
	"strings"
	"testing"
)

// TestSendCallAsleepIsComm: send_call_asleep entries measured at 2 and 16
// ranks, as calibrate writes them at --op-ranks 2,16. The kind is
// communication, so a layerwise16 config (one rank computing at a time:
// compute placement 1, 16 ranks on the host) takes the entries of 16 ranks
// — as it takes send_call's — not those of 2, the nearest count to its
// compute placement; a 2-rank config takes those of 2.
func TestSendCallAsleepIsComm(t *testing.T) {
	if !IsCommKind(SendCallAsleepKind) || !IsCommKind(SendCallKind) {
		t.Fatalf("IsCommKind: send_call %v, send_call_asleep %v; want both communication", IsCommKind(SendCallKind), IsCommKind(SendCallAsleepKind))
	}
	e := func(kind string, ranks int, tS float64) OpTime {
		return OpTime{Kind: kind, Shape: "ranks=2", Size: 256, TimeS: tS, TimeMinS: tS, TimeMaxS: tS, Samples: 5, Ranks: ranks}
	}
	ts := []OpTime{e(SendCallAsleepKind, 2, 7e-6), e(SendCallAsleepKind, 16, 9e-6), e(SendCallKind, 2, 0.2e-6), e(SendCallKind, 16, 3e-6)}
	for _, c := range []struct{ compute, comm, want int }{{1, 16, 16}, {1, 2, 2}} {
		got, _ := OpTimesFor(ts, c.compute, c.comm)
		if len(got) != 2 || got[0].Ranks != c.want || got[1].Ranks != c.want {
			t.Errorf("compute %d, comm %d: %+v; want the two entries of %d ranks", c.compute, c.comm, got, c.want)
		}
	}
}

// TestSendCallAsleepCrossPlacement: a profile of 2 cores with
// send_call_asleep entries at 2 and 4 ranks and a send_call_asleep_cross
// entry at 4 (calibrate writes it only where 4 ranks are bound two to a
// CPU). tp2pp2-tiny (4 ranks per host) takes the cross entry; pp2-tiny
// (2) does not — the nearest count's would be another placement's — and
// is not warned about it.
func TestSendCallAsleepCrossPlacement(t *testing.T) {
	e := func(kind string, ranks int, tS float64) OpTime {
		return OpTime{Kind: kind, Shape: "ranks=2", Size: 256, TimeS: tS, TimeMinS: tS, TimeMaxS: tS, Samples: 5, Ranks: ranks}
	}
	for _, c := range []struct {
		config    string
		wantCross bool
	}{{"test/tp2pp2-tiny", true}, {"pp2-tiny", false}} {
		cal := sampleCalibration() // 2 cores
		cal.OpTimes = []OpTime{e(SendCallAsleepKind, 2, 7e-6), e(SendCallAsleepKind, 4, 13e-6), e(SendCallAsleepCrossKind, 4, 9e-6)}
		cfg, err := Load("test/tp2pp2-tiny")
		if err != nil {
			t.Fatal(err)
		}
		if c.config == "pp2-tiny" {
			cfg.Parallel.TP = 1
		}
		notes := strings.Join(cal.Apply(cfg), "\n")
		cross := false
		for _, ot := range cfg.Hardware.OpTimes {
			cross = cross || ot.Kind == SendCallAsleepCrossKind
		}
		warned := false
		for _, n := range strings.Split(notes, "\n") {
			warned = warned || (strings.HasPrefix(n, "warning") && strings.Contains(n, SendCallAsleepCrossKind))
		}
		if cross != c.wantCross || warned {
			t.Errorf("%s: cross entry taken %v (want %v), notes %q", c.config, cross, c.wantCross, notes)
		}
	}
}

// TestOpTimesForPlacementOnly: OpTimesFor itself takes the cross entry
// (measured at 4) for 4 comm ranks and for no other count — not as the
// nearest for 2 or 8 — and lists it as measured elsewhere for none, while
// send_call_asleep (at 2 and 4) goes to the nearest count as before: 4
// for 8 ranks, listed "(measured at 4)".
func TestOpTimesForPlacementOnly(t *testing.T) {
	e := func(kind string, ranks int) OpTime {
		return OpTime{Kind: kind, Shape: "ranks=2", Size: 256, TimeS: 1e-6, TimeMinS: 1e-6, TimeMaxS: 1e-6, Samples: 5, Ranks: ranks}
	}
	ts := []OpTime{e(SendCallAsleepKind, 2), e(SendCallAsleepKind, 4), e(SendCallAsleepCrossKind, 4)}
	for _, c := range []struct {
		comm      int
		cross     bool
		asleepAt  int
		offAsleep bool
	}{{4, true, 4, false}, {2, false, 2, false}, {8, false, 4, true}} {
		got, off := OpTimesFor(ts, 1, c.comm)
		cross, asleepAt := false, 0
		for _, g := range got {
			switch g.Kind {
			case SendCallAsleepCrossKind:
				cross = true
			case SendCallAsleepKind:
				asleepAt = g.Ranks
			}
		}
		offs := strings.Join(off, ", ")
		if cross != c.cross || asleepAt != c.asleepAt || strings.Contains(offs, SendCallAsleepCrossKind) ||
			strings.Contains(offs, "send_call_asleep (measured at 4)") != c.offAsleep {
			t.Errorf("comm %d: cross %v, send_call_asleep at %d, off %q; want cross %v, at %d, listed %v", c.comm, cross, asleepAt, offs, c.cross, c.asleepAt, c.offAsleep)
		}
	}
}
