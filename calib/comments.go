package calib

import (
	"fmt"

	"github.com/partbench/partbench/configs"
)

// comment says, beside every figure of the written file, where it came from.
func comment(cal *configs.Calibration, h host, o Options, shapes int) {
	c := cal.Comments
	c["hardware.name"] = "from /proc/cpuinfo"
	c["hardware.fp32_flops_per_s"] = fmt.Sprintf("measured: the CPU backend's GEMM (its Compute's MatMul, from the backend registry) over %d GEMM shapes of %v; roofline fit, median over repeats", shapes, o.Configs)
	c["hardware.fp16_flops_per_s"] = "= fp32: the CPU backend computes every dtype in float32"
	c["hardware.bf16_flops_per_s"] = "= fp32: the CPU backend computes every dtype in float32"
	c["hardware.fp8_flops_per_s"] = "not supported by the CPU backend"
	c["hardware.hbm_bytes"] = "MemTotal from /proc/meminfo"
	c["hardware.hbm_reserved_bytes"] = "MemTotal − MemAvailable when calibrated (memory others held)"
	n := len(cal.Cache)
	c["hardware.hbm_bytes_per_s"] = fmt.Sprintf("measured: read bandwidth of working sets of %d to %d B (the curve's %d largest), median", cal.Cache[n-streamPoints].Bytes, cal.Cache[n-1].Bytes, streamPoints)
	c["hardware.l2_bytes"] = fmt.Sprintf("measured: largest working set of the curve still read ≥ %.2f× faster than streaming, median", reusePays)
	c["hardware.l2_usable_fraction"] = "all of it; ranks sharing the host share it too (see docs/calibration.md)"
	c["hardware.l2_bytes_per_s"] = "measured: median read bandwidth of working sets in (l2_bytes/4, l2_bytes]"
	c["hardware.sms"] = "logical CPUs (runtime.NumCPU)"
	if h.l1dBytes > 0 {
		c["hardware.shared_mem_per_sm_bytes"] = "L1 data cache per core (sysfs)"
	} else {
		c["hardware.shared_mem_per_sm_bytes"] = "unknown: sysfs lists no caches here"
	}
	c["hardware.kernel_launch_s"] = "measured: exec/cpu Compute.Exec of a one-row residual add (per-op overhead), median"
	c["hardware.compute_efficiency"] = "1: fp32_flops_per_s is already an achieved rate"
	c["hardware.hbm_efficiency"] = "1: hbm_bytes_per_s is already an achieved rate"
	c["topology.name"] = "the ranks of one host"
	if cal.Topology.GPUsPerNode > 1 {
		c["topology.intra_node.class"] = "TCP sockets: modeled with NCCL's network-class protocol constants"
		c["topology.intra_node.bytes_per_s"] = "fitted β: sim's collective model against the measured all_reduce and sendrecv (docs/calibration.md)"
		c["topology.intra_node.latency_s"] = "fitted α, with β"
	}
	c["spread.fp32_flops_per_s"] = "the fit of each repeat"
	c["spread.hbm_bytes_per_s"] = "each repeat's streaming points"
	c["spread.l2_bytes"] = "each repeat's curve"
	c["spread.l2_bytes_per_s"] = "each repeat's curve"
	c["spread.kernel_launch_s"] = "each repeat"
	c["spread.link_bytes_per_s"] = "the fit of each repeat"
	c["spread.link_latency_s"] = "the fit of each repeat"
}
