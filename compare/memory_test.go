package compare

import (
	"testing"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// A rank that allocated weights 100, KV 50, buffers 30 and a workspace of
// 45 of which 40 is cuBLAS's (225 in all), against a model of 100 + 50 +
// 20 = 170: the allocated total is 55 over the model (+32.35 %). The
// device went from 1000 in use before the setup to 1300 after it (75
// beyond the allocations: the driver's), 1310 after the communicator (10)
// and 1312 at the end (2): the rank took 312 = 225 + 75 + 10 + 2.
func TestItemizeMemory(t *testing.T) {
	r := exec.RankResult{Rank: 2, AllocatedBytes: 225,
		AllocatedByKind: map[string]int64{exec.AllocWeights: 100, exec.AllocKV: 50, exec.AllocBuffers: 30, exec.AllocWorkspace: 45},
		DeviceMemory:    &exec.MemoryMeasure{BeforeSetupBytes: 1000, AfterSetupBytes: 1300, AfterCommBytes: 1310, EndBytes: 1312, LibraryWorkspaceBytes: 40}}
	m := partition.Memory{WeightBytes: 100, KVCacheBytes: 50, ActivationBytes: 20, TotalBytes: 170}
	got := ItemizeMemory(r, m)
	want := []MemoryItem{
		{Name: MemWeights, ExecBytes: 100, ModelBytes: 100},
		{Name: MemKV, ExecBytes: 50, ModelBytes: 50},
		{Name: MemBuffers, ExecBytes: 30, ModelBytes: 20},
		{Name: MemWorkspace, ExecBytes: 5},
		{Name: MemLibrary, ExecBytes: 40},
		{Name: MemAllocated, ExecBytes: 225, ModelBytes: 170, Total: true},
		{Name: MemSetup, ExecBytes: 75, Measured: true},
		{Name: MemComm, ExecBytes: 10, Measured: true},
		{Name: MemGrown, ExecBytes: 2, Measured: true},
		{Name: MemDeviceTotal, ExecBytes: 312, ModelBytes: 170, Measured: true, Total: true},
	}
	if len(got.Items) != len(want) {
		t.Fatalf("items %+v, want %+v", got.Items, want)
	}
	for i := range want {
		if got.Items[i] != want[i] {
			t.Errorf("item %d = %+v, want %+v", i, got.Items[i], want[i])
		}
	}
	if got.Rank != 2 || got.AllocatedBytes != 225 || got.ModelBytes != 170 || got.DeviceBytes != 312 || got.RelDiff != 55.0/170 {
		t.Errorf("%+v", got)
	}
	// The items that are not totals sum to the device total; the
	// allocated ones to the allocated total.
	var all, alloc int64
	for _, it := range got.Items {
		if it.Total {
			continue
		}
		all += it.ExecBytes
		if !it.Measured {
			alloc += it.ExecBytes
		}
	}
	if all != got.DeviceBytes || alloc != got.AllocatedBytes {
		t.Errorf("items sum to %d (allocated %d), totals %d and %d", all, alloc, got.DeviceBytes, got.AllocatedBytes)
	}

	// A backend that itemizes part of its allocations and reads no device
	// memory: the rest is a line of its own, and nothing is measured.
	r = exec.RankResult{AllocatedBytes: 10, AllocatedByKind: map[string]int64{exec.AllocWeights: 7}}
	got = ItemizeMemory(r, partition.Memory{WeightBytes: 7, TotalBytes: 7})
	var names []string
	for _, it := range got.Items {
		names = append(names, it.Name)
	}
	if n := len(got.Items); n != 6 || got.Items[4].Name != MemUnitemized || got.Items[4].ExecBytes != 3 || got.DeviceBytes != 0 {
		t.Errorf("items %v: %+v", names, got.Items)
	}
}
