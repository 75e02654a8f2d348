package compare

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// A count difference ends a run with 4 whatever --strict says; a timed
// metric outside the tolerance ends it with 3 only under --strict.
func TestVerdict(t *testing.T) {
	outside := []Row{{Metric: "tpot", Label: "TPOT", Modeled: 1, RelErr: -0.5, Flag: "outside ±15 %"}} // modeled 1 against 2 measured
	var ve *VerdictError
	if err := Verdict(&RunDoc{Problems: []string{"rank 0: 3 calls, Program 2"}}, false); !errors.As(err, &ve) || ve.ExitCode() != 4 {
		t.Errorf("counts: %v", err)
	}
	if err := Verdict(&RunDoc{Tolerance: 0.15, Comparison: outside}, false); err != nil {
		t.Errorf("not strict: %v", err)
	}
	err := Verdict(&RunDoc{Tolerance: 0.15, Comparison: outside}, true)
	if !errors.As(err, &ve) || ve.ExitCode() != 3 || !strings.HasPrefix(err.Error(), "--strict: outside ±15 %") {
		t.Errorf("strict: %v", err)
	}
	if err := Verdict(&RunDoc{Tolerance: 0.15}, true); err != nil {
		t.Errorf("clean run: %v", err)
	}
}

// EmulateRun refuses a rank count that is not the plan's before it runs
// anything (tp2pp2-tiny: tp × pp = 2 × 2 = 4 ranks).
func TestEmulateRunRankCount(t *testing.T) {
	plan, err := partition.LoadPlan("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	_, err = EmulateRun(context.Background(), plan, 3, nil, sim.CollectiveOptions{})
	if err == nil || !strings.Contains(err.Error(), "--emulate-ranks: tp2pp2-tiny needs tp × pp = 4 ranks (got 3)") {
		t.Errorf("got %v", err)
	}
}
