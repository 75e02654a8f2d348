package compare

import (
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// Memory items of RankMemory, in order.
const (
	MemWeights     = "weights"
	MemKV          = "KV cache"
	MemBuffers     = "activations and buffers"
	MemWorkspace   = "workspace (fixed per rank: flags, prompt ids, kernels' scratch, tables)"
	MemLibrary     = "cuBLAS workspace"
	MemSetup       = "driver at setup (kernel modules, library handles, allocator rounding)"
	MemComm        = "communicator (NCCL)"
	MemGrown       = "grown while running (lazy module loading, library allocations)"
	MemUnitemized  = "allocated, not itemized by the backend"
	MemAllocated   = "allocated by the executor"
	MemDeviceTotal = "device memory the rank took"
)

// MemoryItem is one line of a rank's memory: what the executor holds
// beside what the model counts (0 where the model counts nothing).
type MemoryItem struct {
	Name       string `json:"name"`
	ExecBytes  int64  `json:"exec_bytes"`
	ModelBytes int64  `json:"model_bytes"`
	// Measured marks an item read from the driver (cuMemGetInfo
	// differences) rather than counted from the backend's allocations.
	Measured bool `json:"measured,omitempty"`
	// Total marks a sum of the items above it.
	Total bool `json:"total,omitempty"`
}

// RankMemory is a rank's memory itemized against the model's.
type RankMemory struct {
	Rank  int          `json:"rank"`
	Items []MemoryItem `json:"items"`
	// AllocatedBytes is the executor's allocations (the items counted from
	// them sum to it); ModelBytes the model's total; RelDiff their
	// difference over the model's.
	AllocatedBytes int64   `json:"allocated_bytes"`
	ModelBytes     int64   `json:"model_bytes"`
	RelDiff        float64 `json:"rel_diff"`
	// DeviceBytes is the device memory the rank took from before its
	// setup to the end of the measured iterations (0 where not measured);
	// the allocated and measured items sum to it.
	DeviceBytes int64 `json:"device_bytes,omitempty"`
}

// ItemizeMemory puts r's memory beside m, the model's for r's stage:
// weights, KV cache and activations against the model's; the workspaces
// the model does not count; and, where the backend read the device's
// memory (r.DeviceMemory), what the driver, the communicator and the run
// itself took beyond the allocations.
func ItemizeMemory(r exec.RankResult, m partition.Memory) RankMemory {
	rm := RankMemory{Rank: r.Rank, AllocatedBytes: r.AllocatedBytes, ModelBytes: m.TotalBytes}
	add := func(name string, exec, model int64, measured bool) {
		rm.Items = append(rm.Items, MemoryItem{Name: name, ExecBytes: exec, ModelBytes: model, Measured: measured})
	}
	k := r.AllocatedByKind
	var lib int64
	if r.DeviceMemory != nil {
		lib = r.DeviceMemory.LibraryWorkspaceBytes
	}
	add(MemWeights, k[exec.AllocWeights], m.WeightBytes, false)
	add(MemKV, k[exec.AllocKV], m.KVCacheBytes, false)
	add(MemBuffers, k[exec.AllocBuffers], m.ActivationBytes, false)
	add(MemWorkspace, k[exec.AllocWorkspace]-lib, 0, false)
	if lib > 0 {
		add(MemLibrary, lib, 0, false)
	}
	var counted int64
	for _, it := range rm.Items {
		counted += it.ExecBytes
	}
	if rest := r.AllocatedBytes - counted; rest != 0 {
		add(MemUnitemized, rest, 0, false)
	}
	rm.Items = append(rm.Items, MemoryItem{Name: MemAllocated, ExecBytes: r.AllocatedBytes, ModelBytes: m.TotalBytes, Total: true})
	if m.TotalBytes > 0 {
		rm.RelDiff = float64(r.AllocatedBytes-m.TotalBytes) / float64(m.TotalBytes)
	}
	if d := r.DeviceMemory; d != nil {
		add(MemSetup, d.AfterSetupBytes-d.BeforeSetupBytes-r.AllocatedBytes, 0, true)
		add(MemComm, d.AfterCommBytes-d.AfterSetupBytes, 0, true)
		add(MemGrown, d.EndBytes-d.AfterCommBytes, 0, true)
		rm.DeviceBytes = d.EndBytes - d.BeforeSetupBytes
		rm.Items = append(rm.Items, MemoryItem{Name: MemDeviceTotal, ExecBytes: rm.DeviceBytes, ModelBytes: m.TotalBytes, Measured: true, Total: true})
	}
	return rm
}

// ItemizeRunMemory is ItemizeMemory for every rank of a run, against the
// model's memory of its stage.
func ItemizeRunMemory(plan *partition.Plan, results []exec.RankResult) []RankMemory {
	var out []RankMemory
	for _, r := range results {
		if r.Stage < 0 || r.Stage >= len(plan.StageMemory) {
			continue
		}
		out = append(out, ItemizeMemory(r, plan.StageMemory[r.Stage]))
	}
	return out
}
