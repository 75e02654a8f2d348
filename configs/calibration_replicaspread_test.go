package configs

import (
	"strings"
	"testing"
)

// The replica spread is a shared-core entry: communication-placed, kept
// only at the rank count it was measured at. tp2-dp2-tiny (4 ranks, 2
// replicas) on a 2-core profile keeps the entries measured at 4 ranks, not
// those at 16, and says it prices TTFT as the later of 2 replicas, ×1.05 to
// ×1.09; with entries at 16 only it says TTFT is one replica's; a config
// of one replica (tp2pp2-tiny) says nothing of replicas.
func TestReplicaSpreadApply(t *testing.T) {
	e := func(size, r int64, f float64, ranks int) OpTime {
		return OpTime{Kind: ReplicaSpreadKind, Shape: CoreWaitShape(2), Size: size, Context: r, TimeS: f, TimeMinS: f, TimeMaxS: f, Samples: 41, Ranks: ranks}
	}
	if !IsCommKind(ReplicaSpreadKind) || !isWaitKind(ReplicaSpreadKind) {
		t.Fatalf("%s: comm kind %t, wait kind %t, want both", ReplicaSpreadKind, IsCommKind(ReplicaSpreadKind), isWaitKind(ReplicaSpreadKind))
	}
	at4 := []OpTime{e(600_000, 2, 1.09, 4), e(2_500_000, 2, 1.05, 4)}
	at16 := []OpTime{e(600_000, 2, 1.30, 16), e(600_000, 4, 1.50, 16)}
	apply := func(name string, ts []OpTime) ([]OpTime, string) {
		cal := sampleCalibration() // 2 cores
		cal.OpTimes = append(sampleOpTimes(), ts...)
		cfg, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(cal.Apply(cfg), "\n")
		var kept []OpTime
		for _, o := range cfg.Hardware.OpTimes {
			if o.Kind == ReplicaSpreadKind {
				kept = append(kept, o)
			}
		}
		return kept, notes
	}
	kept, notes := apply("test/tp2-dp2-tiny", append(append([]OpTime{}, at4...), at16...))
	if len(kept) != 2 || kept[0].Ranks != 4 || kept[1].Ranks != 4 ||
		!strings.Contains(notes, "TTFT is priced as the later of the config's 2 replicas: one replica's times the replica spread measured at 4 ranks (×1.050 to ×1.090") {
		t.Errorf("tp2-dp2-tiny: kept %+v, notes %q", kept, notes)
	}
	kept, notes = apply("test/tp2-dp2-tiny", at16)
	if len(kept) != 0 || !strings.Contains(notes, "the profile has no replica spread for 2 replicas at 4 ranks: TTFT is priced as one replica's") {
		t.Errorf("tp2-dp2-tiny, spread at 16 only: kept %+v, notes %q", kept, notes)
	}
	if _, notes = apply("test/tp2pp2-tiny", at4); strings.Contains(notes, "replicas") {
		t.Errorf("tp2pp2-tiny (one replica): notes %q", notes)
	}
}
