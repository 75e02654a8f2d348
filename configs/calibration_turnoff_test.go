package configs

import "testing"

// TestKeepTurnOff: turn_off entries measured at 16 and at 4 ranks on a
// 2-core host; a config of 16 ranks keeps the one at 16 only, one of 8
// neither (measured at another count), and the kind is picked as the
// waits are, by the ranks on the host (a communication kind).
func TestKeepTurnOff(t *testing.T) {
	e := func(ranks int, s float64) OpTime {
		return OpTime{Kind: TurnOffKind, Shape: CoreWaitShape(2), Size: 250_000, TimeS: s, TimeMinS: s, TimeMaxS: s, Samples: 1, Ranks: ranks}
	}
	all := []OpTime{e(16, 58e-6), e(4, 16e-6)}
	got, _ := keepCoreWait(all, all, 16, 2)
	if len(got) != 1 || got[0].Ranks != 16 || got[0].TimeS != 58e-6 {
		t.Errorf("16 ranks: kept %+v, want the entry at 16 only", got)
	}
	if got, _ := keepCoreWait(all, all, 8, 2); len(got) != 0 {
		t.Errorf("8 ranks: kept %+v, want none", got)
	}
	if !IsCommKind(TurnOffKind) {
		t.Error("turn_off: not picked by the ranks on the host")
	}
}
