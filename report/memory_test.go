package report

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// One row per item, in MB, with the allocated total's difference from the
// model in percent: 225 B allocated against 170 B modeled is +32.4 %.
func TestMemoryGrid(t *testing.T) {
	r := exec.RankResult{Rank: 1, AllocatedBytes: 225,
		AllocatedByKind: map[string]int64{exec.AllocWeights: 100, exec.AllocKV: 50, exec.AllocBuffers: 30, exec.AllocWorkspace: 45},
		DeviceMemory:    &exec.MemoryMeasure{BeforeSetupBytes: 1000, AfterSetupBytes: 1300, AfterCommBytes: 1310, EndBytes: 1312, LibraryWorkspaceBytes: 40}}
	rm := compare.ItemizeMemory(r, partition.Memory{WeightBytes: 100, KVCacheBytes: 50, ActivationBytes: 20, TotalBytes: 170})
	g := MemoryGrid([]compare.RankMemory{rm})
	if len(g.Rows) != len(rm.Items) || len(g.Notes) != 2 {
		t.Fatalf("%d rows for %d items, %d notes", len(g.Rows), len(rm.Items), len(g.Notes))
	}
	var total []string
	for _, row := range g.Rows {
		if row[1] == compare.MemAllocated {
			total = row
		}
	}
	if total == nil || total[2] != "0.000" || !strings.HasSuffix(total[4], "(+32.4 %)") || total[5] != "total" {
		t.Errorf("allocated row %q", total)
	}
}

// The notes give each sum beside the host's time and the gap: prefill
// 9 ms against 10 ms is −1.000 ms, −10.0 %; decode 1.5 against 2 ms is
// −0.500 ms, −25.0 %, and op by op 2.2 ms is +0.200 ms, +10.0 %.
func TestTraceSumNotes(t *testing.T) {
	notes := TraceSumNotes([]exec.TraceSummary{{Rank: 0, Device: true, PrefillOpS: 9e-3, PrefillHostS: 10e-3,
		DecodeSteps: 2, DecodeOpS: 1.5e-3, DecodeHostS: 2e-3, DecodeOpByOpS: 2.2e-3, GraphOps: 4}})
	if len(notes) != 2 {
		t.Fatalf("notes %q", notes)
	}
	for _, want := range []string{"9.000 ms", "10.000 ms", "-1.000 ms, -10.0 %", "device"} {
		if !strings.Contains(notes[0], want) {
			t.Errorf("prefill note %q lacks %q", notes[0], want)
		}
	}
	for _, want := range []string{"1.500 ms", "2.000 ms", "-0.500 ms, -25.0 %", "2.200 ms", "+0.200 ms, +10.0 %", "4 traced ops ran inside CUDA graphs"} {
		if !strings.Contains(notes[1], want) {
			t.Errorf("decode note %q lacks %q", notes[1], want)
		}
	}
}
