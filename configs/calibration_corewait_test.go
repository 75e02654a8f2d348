package configs

import "testing"

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
