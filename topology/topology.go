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

// Physically meaningful ranges of a link's numbers: from a slow serial line
// to well beyond any link built (NVLink 5 is 900 GB/s per direction), and a
// latency from none to a second.
const (
	MinLinkBytesPerS = 1e3
	MaxLinkBytesPerS = 1e15
	MaxLinkLatencyS  = 1
)

// Validate checks a link's numbers; field is the config path used in errors.
func (l Link) Validate(field string) error {
	switch l.Class {
	case NVLink, PCIe, Network:
	default:
		return fmt.Errorf("%s.class: must be one of nvlink, pcie, network (got %q)", field, l.Class)
	}
	if err := l.validateNumbers(field); err != nil {
		return err
	}
	if l.Switch && l.Class != NVLink {
		return fmt.Errorf("%s.nvswitch: only an nvlink path can have an NVSwitch (class is %q)", field, l.Class)
	}
	return nil
}

func (l Link) validateNumbers(field string) error {
	if err := InRange(field+".bytes_per_s", l.BytesPerS, MinLinkBytesPerS, MaxLinkBytesPerS, "B/s"); err != nil {
		return err
	}
	return InRange(field+".latency_s", l.LatencyS, 0, MaxLinkLatencyS, "seconds")
}

// validateUnused checks the numbers a link a topology does not use still
// holds: an unset (zero) figure is allowed, a set one must be in range, so
// that a NaN or 1e-308 is refused whether or not the section is used.
func (l Link) validateUnused(field string) error {
	switch l.Class {
	case "", NVLink, PCIe, Network:
	default:
		return fmt.Errorf("%s.class: must be one of nvlink, pcie, network (got %q)", field, l.Class)
	}
	if l.BytesPerS != 0 {
		if err := InRange(field+".bytes_per_s", l.BytesPerS, MinLinkBytesPerS, MaxLinkBytesPerS, "B/s"); err != nil {
			return err
		}
	}
	return InRange(field+".latency_s", l.LatencyS, 0, MaxLinkLatencyS, "seconds")
}

// InRange says, naming field, why v is not a finite number in [lo, hi].
func InRange(field string, v, lo, hi float64, unit string) error {
	if v >= lo && v <= hi { // false for NaN
		return nil
	}
	if unit != "" {
		unit = " " + unit
	}
	kind := "a finite number"
	if lo > 0 {
		kind = "a positive finite number"
	}
	return fmt.Errorf("%s: must be %s in [%g, %g]%s (got %g)", field, kind, lo, hi, unit, v)
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
	// Collectives, when set, replaces the collective model's fitted
	// constants for this system (CollectiveTuning).
	Collectives *CollectiveTuning `toml:"collectives" json:"collectives,omitempty"`
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
	for _, l := range []struct {
		link Link
		name string
		used bool
	}{{t.Intra, ".intra_node", t.GPUsPerNode > 1}, {t.Inter, ".inter_node", t.Nodes > 1}} {
		check := l.link.validateUnused
		if l.used {
			check = l.link.Validate
		}
		if err := check(field + l.name); err != nil {
			return err
		}
	}
	return t.Collectives.Validate(field + ".collectives")
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

	// GEMM shape model (docs/costmodel.md, "GEMM shape"): a GEMM is cut into
	// output tiles of GemmTileM × GemmTileN that run in waves over the SMs;
	// a partial last wave and tiles padded past the matrix edge waste compute.
	// GemmTileM is the tallest tile; a GEMM with fewer rows uses the smallest
	// power of two ≥ its rows, from GemmMinTileM up. 0 turns the shape model off
	// (every GEMM at ComputeEfficiency). `partbench calibrate` may fit them.
	GemmTileM    int `toml:"gemm_tile_m" json:"gemm_tile_m,omitempty"`
	GemmTileN    int `toml:"gemm_tile_n" json:"gemm_tile_n,omitempty"`
	GemmMinTileM int `toml:"gemm_min_tile_m" json:"gemm_min_tile_m,omitempty"`

	// Fixed costs per step (docs/costmodel.md, "Fixed costs"). StepOverheadS
	// is the host's work once per forward pass on the last stage: scheduling,
	// sampling, detokenising. With CUDAGraphs each decode step is one graph:
	// GraphLaunchS once per step and GraphKernelS per kernel (the gap between
	// kernels inside a graph) replace KernelLaunchS per kernel.
	StepOverheadS float64 `toml:"step_overhead_s" json:"step_overhead_s,omitempty"`
	CUDAGraphs    bool    `toml:"cuda_graphs" json:"cuda_graphs,omitempty"`
	GraphLaunchS  float64 `toml:"graph_launch_s" json:"graph_launch_s,omitempty"`
	GraphKernelS  float64 `toml:"graph_kernel_s" json:"graph_kernel_s,omitempty"`
	// GraphOpSavedS is the device time a decode graph saves per op against
	// the op-time table: the table times each op on a stream with a mark
	// (an event) after it, the kernels launched one by one, and so holds
	// per op the mark and the stream's gaps between launches that the
	// graph's replay of the same ops does not. sim takes it off each decode
	// op it prices from the table where CUDAGraphs (never below 0);
	// `partbench calibrate --backend cuda` measures it (the
	// op configs' decode steps held on the device and timed as one graph
	// against the table's sum). 0: none (a profile written before it).
	GraphOpSavedS float64 `toml:"graph_op_saved_s" json:"graph_op_saved_s,omitempty"`
	// HostOpS is the host's time to queue one compute op of a pass the
	// executor runs eagerly, op by op (prefill; decode without CUDAGraphs):
	// its kernels' launches, its timing events, the executor's loop. The
	// host queues a pass from the sync that ended the last one, so the
	// pass's i-th compute op starts no earlier than i × HostOpS after the
	// pass's start: a pass of ops shorter than that runs at the host's
	// rate, not the device's. `partbench calibrate --backend cuda`
	// measures it (an op config's prefill queued as a run queues it).
	// 0: not modeled (a profile written before it, the presets, the CPU).
	HostOpS float64 `toml:"host_op_s" json:"host_op_s,omitempty"`
	// StepPerSeqS is the host's work per sequence in a pass that samples
	// (sampler, stop checks, detokenising, batch bookkeeping), on top of
	// StepOverheadS; StepPerTokenS is its work per token scheduled in a pass
	// (input preparation), charged where the tokens enter (the input op).
	// Runtime profiles (configs [runtime]) set them; 0: none.
	StepPerSeqS   float64 `toml:"step_per_seq_s" json:"step_per_seq_s,omitempty"`
	StepPerTokenS float64 `toml:"step_per_token_s" json:"step_per_token_s,omitempty"`
	// AllReduce is the tensor-parallel all-reduce the runtime uses: "" or
	// "nccl" (NCCL's algorithms only), or "custom": a one-shot/two-shot
	// kernel over NVLink peer memory for messages up to
	// CustomAllReduceMaxBytes within one node, as vLLM and TensorRT-LLM do
	// (sim takes the fastest of it and NCCL). CustomAllReduceFixedS is the
	// custom kernel's fixed cost per shot (launch and barrier).
	AllReduce               string  `toml:"all_reduce" json:"all_reduce,omitempty"`
	CustomAllReduceMaxBytes int64   `toml:"custom_all_reduce_max_bytes" json:"custom_all_reduce_max_bytes,omitempty"`
	CustomAllReduceFixedS   float64 `toml:"custom_all_reduce_fixed_s" json:"custom_all_reduce_fixed_s,omitempty"`

	// Ranges are the stated uncertainty of the assumed parameters: each
	// estimate is also run at the optimistic and pessimistic end of every
	// range to give min and max. Empty: no spread.
	Ranges ParamRanges `toml:"ranges" json:"ranges"`
}

// The all-reduce a runtime uses (GPU.AllReduce).
const (
	AllReduceNCCL   = "nccl"
	AllReduceCustom = "custom"
)

// ParamRanges gives [low, high] for the parameters an estimate is most
// sensitive to; a zero pair means "no spread" for that parameter.

// Inline is the ranges as one TOML inline table.
func (r ParamRanges) Inline() string {
	f := func(v [2]float64) string { return "[" + TOMLValue(v[0]) + ", " + TOMLValue(v[1]) + "]" }
	return "{ compute_efficiency = " + f(r.ComputeEfficiency) + ", hbm_efficiency = " + f(r.HBMEfficiency) +
		", kernel_launch_s = " + f(r.KernelLaunchS) + ", step_overhead_s = " + f(r.StepOverheadS) + " }"
}

type ParamRanges struct {
	ComputeEfficiency [2]float64 `toml:"compute_efficiency" json:"compute_efficiency"`
	HBMEfficiency     [2]float64 `toml:"hbm_efficiency" json:"hbm_efficiency"`
	KernelLaunchS     [2]float64 `toml:"kernel_launch_s" json:"kernel_launch_s"`
	StepOverheadS     [2]float64 `toml:"step_overhead_s" json:"step_overhead_s"`
}

// Bound returns the GPU with every ranged parameter at its optimistic (fast)
// or pessimistic (slow) end; without ranges it returns g unchanged.
func (g GPU) Bound(fast bool) GPU {
	r := g.Ranges
	pick := func(v float64, rg [2]float64, higherIsFaster bool) float64 {
		if rg == [2]float64{} {
			return v
		}
		// The value itself (e.g. a calibrated one outside the stated range)
		// always lies between the two ends.
		if fast == higherIsFaster {
			return math.Max(v, rg[1])
		}
		return math.Min(v, rg[0])
	}
	g.ComputeEfficiency = pick(g.ComputeEfficiency, r.ComputeEfficiency, true)
	g.HBMEfficiency = pick(g.HBMEfficiency, r.HBMEfficiency, true)
	g.KernelLaunchS = pick(g.KernelLaunchS, r.KernelLaunchS, false)
	g.StepOverheadS = pick(g.StepOverheadS, r.StepOverheadS, false)
	return g
}

// PeakFLOPsPerS is the dense peak for a data type name (fp32, fp16, bf16, fp8).
// It takes the GPU by address: sim asks it for every op it prices, and a
// value receiver copies all 304 bytes of the GPU even when inlined.
func (g *GPU) PeakFLOPsPerS(dtype string) float64 {
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

// Physically meaningful ranges of a GPU's figures: from a small CPU core to
// well beyond any accelerator built (an H100 is ≈ 1e15 FLOP/s dense fp16
// and 3.35e12 B/s of HBM, a B200 ≈ 4.5e15 and 8e12), so that a typo
// (1e-308, 5e-324) or a NaN cannot reach the estimate.
const (
	MinFLOPsPerS    = 1e6
	MaxFLOPsPerS    = 1e18
	MinBytesPerS    = 1e6
	MaxBytesPerS    = 1e16
	MinEfficiency   = 1e-3
	MaxHBMBytes     = 1 << 50 // 1 PiB
	MaxL2Bytes      = 1 << 40 // 1 TiB
	MaxSMs          = 1 << 20
	MaxKernelLaunch = 1e-2 // seconds
	MaxGemmTile     = 1 << 12
	MaxStepOverhead = 1.0 // seconds
)

// Validate checks the GPU; field is the config path used in errors.
func (g GPU) Validate(field string) error {
	f := func(name string) string { return field + "." + name }
	for _, c := range []struct {
		name, unit string
		v, lo, hi  float64
	}{
		{"fp32_flops_per_s", "FLOP/s", g.FP32FLOPsPerS, MinFLOPsPerS, MaxFLOPsPerS},
		{"fp16_flops_per_s", "FLOP/s", g.FP16FLOPsPerS, MinFLOPsPerS, MaxFLOPsPerS},
		{"bf16_flops_per_s", "FLOP/s", g.BF16FLOPsPerS, MinFLOPsPerS, MaxFLOPsPerS},
		{"hbm_bytes", "bytes", float64(g.HBMBytes), 1, MaxHBMBytes},
		{"hbm_bytes_per_s", "B/s", g.HBMBytesPerS, MinBytesPerS, MaxBytesPerS},
		{"l2_bytes", "bytes", float64(g.L2Bytes), 1, MaxL2Bytes},
		{"l2_bytes_per_s", "B/s", g.L2BytesPerS, MinBytesPerS, MaxBytesPerS},
		{"sms", "", float64(g.SMs), 1, MaxSMs},
		{"shared_mem_per_sm_bytes", "bytes", float64(g.SharedMemPerSM), 0, MaxL2Bytes},
		{"l2_usable_fraction", "", g.L2UsableFraction, MinEfficiency, 1},
		{"compute_efficiency", "", g.ComputeEfficiency, MinEfficiency, 1},
		{"hbm_efficiency", "", g.HBMEfficiency, MinEfficiency, 1},
		{"kernel_launch_s", "seconds", g.KernelLaunchS, 0, MaxKernelLaunch},
		{"gemm_tile_m", "rows, or 0 (no shape model)", float64(g.GemmTileM), 0, MaxGemmTile},
		{"gemm_tile_n", "columns, or 0 (no shape model)", float64(g.GemmTileN), 0, MaxGemmTile},
		{"gemm_min_tile_m", "rows", float64(g.GemmMinTileM), 0, MaxGemmTile},
		{"step_overhead_s", "seconds", g.StepOverheadS, 0, MaxStepOverhead},
		{"graph_launch_s", "seconds", g.GraphLaunchS, 0, MaxStepOverhead},
		{"graph_kernel_s", "seconds", g.GraphKernelS, 0, MaxKernelLaunch},
		{"graph_op_saved_s", "seconds", g.GraphOpSavedS, 0, MaxKernelLaunch},
		{"host_op_s", "seconds", g.HostOpS, 0, MaxKernelLaunch},
		{"step_per_seq_s", "seconds", g.StepPerSeqS, 0, MaxKernelLaunch},
		{"step_per_token_s", "seconds", g.StepPerTokenS, 0, MaxKernelLaunch},
		{"custom_all_reduce_fixed_s", "seconds", g.CustomAllReduceFixedS, 0, MaxKernelLaunch},
		{"custom_all_reduce_max_bytes", "bytes", float64(g.CustomAllReduceMaxBytes), 0, MaxL2Bytes},
	} {
		if c.v >= c.lo && c.v <= c.hi { // InRange's test: the field's path is put together only for its error
			continue
		}
		if err := InRange(f(c.name), c.v, c.lo, c.hi, c.unit); err != nil {
			return err
		}
	}
	if g.FP8FLOPsPerS != 0 {
		if err := InRange(f("fp8_flops_per_s"), g.FP8FLOPsPerS, MinFLOPsPerS, MaxFLOPsPerS, "FLOP/s, or 0 (not supported)"); err != nil {
			return err
		}
	}
	switch g.AllReduce {
	case "", AllReduceNCCL:
	case AllReduceCustom:
		if g.CustomAllReduceMaxBytes <= 0 {
			return fmt.Errorf("%s.custom_all_reduce_max_bytes: all_reduce = %q needs the largest message the custom kernel takes, > 0 bytes (got %d)", field, g.AllReduce, g.CustomAllReduceMaxBytes)
		}
	default:
		return fmt.Errorf("%s.all_reduce: must be %q or %q (got %q)", field, AllReduceNCCL, AllReduceCustom, g.AllReduce)
	}
	if (g.GemmTileM == 0) != (g.GemmTileN == 0) {
		return fmt.Errorf("%s.gemm_tile_m, gemm_tile_n: set both or neither (got %d and %d)", field, g.GemmTileM, g.GemmTileN)
	}
	if g.GemmMinTileM > g.GemmTileM {
		return fmt.Errorf("%s.gemm_min_tile_m: must be ≤ gemm_tile_m = %d (got %d)", field, g.GemmTileM, g.GemmMinTileM)
	}
	if r := g.Ranges; true {
		for _, c := range []struct {
			name  string
			rg    [2]float64
			v, hi float64
			lo    float64
		}{
			{"compute_efficiency", r.ComputeEfficiency, g.ComputeEfficiency, 1, MinEfficiency},
			{"hbm_efficiency", r.HBMEfficiency, g.HBMEfficiency, 1, MinEfficiency},
			{"kernel_launch_s", r.KernelLaunchS, g.KernelLaunchS, MaxKernelLaunch, 0},
			{"step_overhead_s", r.StepOverheadS, g.StepOverheadS, MaxStepOverhead, 0},
		} {
			if c.rg == [2]float64{} {
				continue
			}
			if !(c.rg[0] >= c.lo && c.rg[0] <= c.rg[1] && c.rg[1] <= c.hi) {
				return fmt.Errorf("%s.ranges.%s: must be [low, high] with %g ≤ low ≤ high ≤ %g (got [%g, %g])",
					field, c.name, c.lo, c.hi, c.rg[0], c.rg[1])
			}
		}
	}
	if g.HBMReservedBytes < 0 || g.HBMReservedBytes >= g.HBMBytes {
		return fmt.Errorf("%s.hbm_reserved_bytes: must be in [0, hbm_bytes) (got %d of %d)", field, g.HBMReservedBytes, g.HBMBytes)
	}
	return nil
}

// System is one GPU model on one topology: everything sim needs about hardware.
type System struct {
	GPU      GPU      `json:"gpu"`
	Topology Topology `json:"topology"`
}
