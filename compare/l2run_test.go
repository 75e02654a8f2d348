package compare_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

func TestL2StrategiesNotesAndProbe(t *testing.T) {
	tiny, err := configs.Load("test/tp2pp2-tiny") // fp32, 4 ranks
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.EstimatePlan(tinyPlan(t), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Unprobed: the figures are compare.L2's, the notes the caller's.
	got, err := compare.L2Strategies([]*configs.Config{tiny}, [][]string{{"calibrated"}}, false, nil, configs.BackendCPU)
	want := compare.L2(e, nil, 0)
	want.Notes = []string{"calibrated"}
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("unprobed: %v\n%+v\nwant\n%+v", err, got, want)
	}
	// Probed, uncalibrated: every rank probed, and a note that the model
	// is not this machine's.
	probes := 0
	probe := func(b int64) calib.Reuse {
		probes++
		return calib.Reuse{Bytes: b, MeasuredBytes: b, ReuseBytesPerS: 2e10, StreamBytesPerS: 1e10, Ratio: 2}
	}
	got, err = compare.L2Strategies([]*configs.Config{tiny}, [][]string{nil}, false, probe, configs.BackendCPU)
	if err != nil || probes != e.Ranks.Len() || len(got[0].Notes) != 1 || !strings.HasPrefix(got[0].Notes[0], "the modeled residency is for "+e.Hardware) {
		t.Fatalf("probed: %v, %d probes for %d ranks, notes %q", err, probes, e.Ranks.Len(), got[0].Notes)
	}
	// A 2-byte dtype: the CPU holds float32 weights, 4/2 = 2× as many bytes.
	half, _ := configs.Load("test/tp2pp2-tiny")
	half.Model.DType = "fp16"
	got, err = compare.L2Strategies([]*configs.Config{half}, [][]string{nil}, true, probe, configs.BackendCPU)
	if err != nil || len(got[0].Notes) != 1 || got[0].Notes[0] != "working sets are the model's fp16 bytes; the CPU backend holds float32 weights, 2× as many" {
		t.Fatalf("fp16: %v, notes %q", err, got[0].Notes)
	}
	// The GPU probe reads the model's own element type: no such note.
	if gpu, err := compare.L2Strategies([]*configs.Config{half}, [][]string{nil}, true, probe, configs.BackendCUDA); err != nil || len(gpu[0].Notes) != 0 {
		t.Fatalf("fp16 on cuda: %v, notes %q", err, gpu[0].Notes)
	}
	// Calibrated: the figures are compare.L2's with the cache bandwidth.
	plan, err := partition.NewPlan(half)
	if err != nil {
		t.Fatal(err)
	}
	he, err := sim.EstimatePlan(plan, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want = compare.L2(he, probe, half.Hardware.L2BytesPerS)
	if got[0].L2 != want.L2 || !reflect.DeepEqual(got[0].Ranks, want.Ranks) {
		t.Errorf("calibrated: %+v\nwant %+v", got[0].Ranks, want.Ranks)
	}
}
