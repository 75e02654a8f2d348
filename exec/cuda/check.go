package cuda

import (
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// Tolerance bounds |gpu − reference| / max(1, |reference|) for outputs
// computed in dtype against exec/cpu's fp32 reference (docs/gpu.md derives
// it): storage rounding dominates, 2^−11 per store in fp16 and 2^−8 in
// bf16, and adds up over the layers.
func Tolerance(dtype string) float64 {
	switch dtype {
	case "fp16":
		return 2e-2
	case "bf16":
		return 1e-1
	}
	return pexec.DefaultTolerance
}

// CheckOptions are exec.CheckOptions that run the partitioned plan on the
// GPU (every rank in this process on opts.Device, its communicators
// newComms(size) staged via the host) against the reference backend ref
// (exec/cpu.New), with the tolerance of opts.DType. exec.Check makes fp32
// plans; set opts.DType to check fp16 or bf16 arithmetic. The caller
// supplies the reference and the host communicators (exec/localcomm.Comms),
// so this backend imports no other.
func CheckOptions(opts Options, ref func(plan *partition.Plan, rank int) (pexec.Compute, error), newComms func(size int) []pexec.Comm) pexec.CheckOptions {
	dt := opts.DType
	if dt == "" {
		dt = "fp32"
	}
	return pexec.CheckOptions{
		Tolerance:    Tolerance(dt),
		NewReference: ref,
		NewCompute: func(plan *partition.Plan, rank int) (pexec.Compute, error) {
			return New(plan, rank, opts)
		},
		NewComms: func(size int) []pexec.Comm { return StagedComms(newComms(size)) },
	}
}
