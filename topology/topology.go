package topology

import (
	"fmt"
	"math"
)

// LinkClass is the kind of path bytes take between two GPUs.
type LinkClass string

const (
	// Local is a GPU talking to itself (no link).
	Local LinkClass = "local"
	// NVLink covers direct NVLink and NVLink through NVSwitch.
	NVLink LinkClass = "nvlink"
	// PCIe is a path through PCIe switches or the CPU root complex.
	PCIe LinkClass = "pcie"
	// Network is a path between nodes (InfiniBand, RoCE, Ethernet).
	Network LinkClass = "network"
)

// LinkClasses lists the classes that carry bytes, in report order.
var LinkClasses = []LinkClass{NVLink, PCIe, Network}

// Link describes one class of path between two GPUs.
type Link struct {
	// Class is nvlink, pcie or network.
	Class LinkClass `toml:"class" json:"class"`
	// Name is a human description, e.g. "NVLink 4 via NVSwitch".
	Name string `toml:"name" json:"name"`
	// BytesPerS is the bandwidth one GPU has on this path, per direction.
	BytesPerS float64 `toml:"bytes_per_s" json:"bytes_per_s"`
	// LatencyS is the one-way latency of one message (or one ring step).
	LatencyS float64 `toml:"latency_s" json:"latency_s"`
	// Switch says an NVSwitch with in-switch reduction (NVLink SHARP, "NVLS")
	// sits on this path.
	Switch bool `toml:"nvswitch" json:"nvswitch"`
}

// Validate checks a link's numbers; field is the config path used in errors.
func (l Link) Validate(field string) error {
	switch l.Class {
	case NVLink, PCIe, Network:
	default:
		return fmt.Errorf("%s.class: must be one of nvlink, pcie, network (got %q)", field, l.Class)
	}
	if !(l.BytesPerS > 0) || math.IsInf(l.BytesPerS, 0) {
		return fmt.Errorf("%s.bytes_per_s: must be a positive finite number (got %g)", field, l.BytesPerS)
	}
	if !(l.LatencyS >= 0) || l.LatencyS > 1 {
		return fmt.Errorf("%s.latency_s: must be in [0, 1] seconds (got %g)", field, l.LatencyS)
	}
	if l.Switch && l.Class != NVLink {
		return fmt.Errorf("%s.nvswitch: only an nvlink path can have an NVSwitch (class is %q)", field, l.Class)
	}
	return nil
}

// Topology is a set of identical nodes, each holding GPUsPerNode GPUs. Ranks
// are numbered node-major: rank r sits on node r / GPUsPerNode.
type Topology struct {
	Name        string `toml:"name" json:"name"`
	Nodes       int    `toml:"nodes" json:"nodes"`
	GPUsPerNode int    `toml:"gpus_per_node" json:"gpus_per_node"`
	// Intra is the path between two GPUs of one node.
	Intra Link `toml:"intra_node" json:"intra_node"`
	// Inter is the path between GPUs of different nodes, per GPU (one NIC per
	// GPU, rail-aligned, as in a DGX).
	Inter Link `toml:"inter_node" json:"inter_node"`
}

// Size is the number of GPUs.
func (t Topology) Size() int { return t.Nodes * t.GPUsPerNode }

// NodeOf is the node that holds rank r.
func (t Topology) NodeOf(r int) int { return r / t.GPUsPerNode }

// Path is the link between ranks a and b.
func (t Topology) Path(a, b int) Link {
	switch {
	case a == b:
		return Link{Class: Local, Name: "same GPU", BytesPerS: math.Inf(1)}
	case t.NodeOf(a) == t.NodeOf(b):
		return t.Intra
	default:
		return t.Inter
	}
}

// Validate checks the topology; field is the config path used in errors.
func (t Topology) Validate(field string) error {
	if t.Nodes < 1 || t.Nodes > 4096 {
		return fmt.Errorf("%s.nodes: must be in [1, 4096] (got %d)", field, t.Nodes)
	}
	if t.GPUsPerNode < 1 || t.GPUsPerNode > 576 {
		return fmt.Errorf("%s.gpus_per_node: must be in [1, 576] (got %d)", field, t.GPUsPerNode)
	}
	if t.GPUsPerNode > 1 {
		if err := t.Intra.Validate(field + ".intra_node"); err != nil {
			return err
		}
	}
	if t.Nodes > 1 {
		if err := t.Inter.Validate(field + ".inter_node"); err != nil {
			return err
		}
	}
	return nil
}

// GPU is the specification of one accelerator. Peak figures are dense
// (no structured sparsity).
type GPU struct {
	Name string `toml:"name" json:"name"`
	// Dense peaks by data type, FLOP/s; fp8 is 0 where the GPU lacks it.
	FP32FLOPsPerS float64 `toml:"fp32_flops_per_s" json:"fp32_flops_per_s"`
	FP16FLOPsPerS float64 `toml:"fp16_flops_per_s" json:"fp16_flops_per_s"`
	BF16FLOPsPerS float64 `toml:"bf16_flops_per_s" json:"bf16_flops_per_s"`
	FP8FLOPsPerS  float64 `toml:"fp8_flops_per_s" json:"fp8_flops_per_s"`
	// HBMBytes is the device memory a process can see; HBMReservedBytes is
	// what the CUDA context, NCCL buffers and the allocator keep for themselves.
	HBMBytes         int64   `toml:"hbm_bytes" json:"hbm_bytes"`
	HBMReservedBytes int64   `toml:"hbm_reserved_bytes" json:"hbm_reserved_bytes"`
	HBMBytesPerS     float64 `toml:"hbm_bytes_per_s" json:"hbm_bytes_per_s"`
	// L2Bytes is the L2 size; L2UsableFraction the part a pinned working set
	// may occupy; L2BytesPerS the L2 read bandwidth.
	L2Bytes          int64   `toml:"l2_bytes" json:"l2_bytes"`
	L2UsableFraction float64 `toml:"l2_usable_fraction" json:"l2_usable_fraction"`
	L2BytesPerS      float64 `toml:"l2_bytes_per_s" json:"l2_bytes_per_s"`
	SMs              int     `toml:"sms" json:"sms"`
	SharedMemPerSM   int64   `toml:"shared_mem_per_sm_bytes" json:"shared_mem_per_sm_bytes"`
	// KernelLaunchS is the fixed cost of one kernel (launch and tail).
	KernelLaunchS float64 `toml:"kernel_launch_s" json:"kernel_launch_s"`
	// ComputeEfficiency and HBMEfficiency are the fractions of the peaks that
	// large kernels reach; calibration replaces them with measured values.
	ComputeEfficiency float64 `toml:"compute_efficiency" json:"compute_efficiency"`
	HBMEfficiency     float64 `toml:"hbm_efficiency" json:"hbm_efficiency"`
}

// PeakFLOPsPerS is the dense peak for a data type name (fp32, fp16, bf16, fp8).
func (g GPU) PeakFLOPsPerS(dtype string) float64 {
	switch dtype {
	case "fp32":
		return g.FP32FLOPsPerS
	case "fp16":
		return g.FP16FLOPsPerS
	case "bf16":
		return g.BF16FLOPsPerS
	case "fp8":
		return g.FP8FLOPsPerS
	}
	return 0
}

// UsableL2Bytes is the L2 a pinned working set may occupy.
func (g GPU) UsableL2Bytes() int64 { return int64(float64(g.L2Bytes) * g.L2UsableFraction) }

// UsableHBMBytes is the device memory left for weights, KV cache and activations.
func (g GPU) UsableHBMBytes() int64 { return g.HBMBytes - g.HBMReservedBytes }

// Validate checks the GPU; field is the config path used in errors.
func (g GPU) Validate(field string) error {
	pos := func(name string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s.%s: must be a positive finite number (got %g)", field, name, v)
		}
		return nil
	}
	frac := func(name string, v float64) error {
		if !(v > 0 && v <= 1) {
			return fmt.Errorf("%s.%s: must be in (0, 1] (got %g)", field, name, v)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    float64
		f    func(string, float64) error
	}{
		{"fp32_flops_per_s", g.FP32FLOPsPerS, pos},
		{"fp16_flops_per_s", g.FP16FLOPsPerS, pos},
		{"bf16_flops_per_s", g.BF16FLOPsPerS, pos},
		{"hbm_bytes", float64(g.HBMBytes), pos},
		{"hbm_bytes_per_s", g.HBMBytesPerS, pos},
		{"l2_bytes", float64(g.L2Bytes), pos},
		{"l2_bytes_per_s", g.L2BytesPerS, pos},
		{"sms", float64(g.SMs), pos},
		{"l2_usable_fraction", g.L2UsableFraction, frac},
		{"compute_efficiency", g.ComputeEfficiency, frac},
		{"hbm_efficiency", g.HBMEfficiency, frac},
	} {
		if err := c.f(c.name, c.v); err != nil {
			return err
		}
	}
	if !(g.FP8FLOPsPerS >= 0) || math.IsInf(g.FP8FLOPsPerS, 0) {
		return fmt.Errorf("%s.fp8_flops_per_s: must be 0 (not supported) or a positive finite number (got %g)", field, g.FP8FLOPsPerS)
	}
	if g.HBMReservedBytes < 0 || g.HBMReservedBytes >= g.HBMBytes {
		return fmt.Errorf("%s.hbm_reserved_bytes: must be in [0, hbm_bytes) (got %d of %d)", field, g.HBMReservedBytes, g.HBMBytes)
	}
	if !(g.KernelLaunchS >= 0) || g.KernelLaunchS > 1e-2 {
		return fmt.Errorf("%s.kernel_launch_s: must be in [0, 0.01] seconds (got %g)", field, g.KernelLaunchS)
	}
	return nil
}

// System is one GPU model on one topology: everything sim needs about hardware.
type System struct {
	GPU      GPU      `json:"gpu"`
	Topology Topology `json:"topology"`
}
