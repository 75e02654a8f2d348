package cuda

import (
	"strings"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/localcomm"
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
// GPU (every rank in this process on opts.Device, communicating through
// exec/localcomm staged via the host) and the reference on exec/cpu, with
// the tolerance of opts.DType. exec.Check makes fp32 plans; set
// opts.DType to check fp16 or bf16 arithmetic.
func CheckOptions(opts Options) pexec.CheckOptions {
	dt := opts.DType
	if dt == "" {
		dt = "fp32"
	}
	return pexec.CheckOptions{
		Tolerance: Tolerance(dt),
		NewCompute: func(plan *partition.Plan, rank int) (pexec.Compute, error) {
			if isCheckReference(plan) {
				return cpu.New(plan, rank)
			}
			return New(plan, rank, opts)
		},
		NewComms: func(size int) []pexec.Comm { return StagedComms(localcomm.Comms(size)) },
	}
}

// isCheckReference tells exec.Check's reference plan from the checked one:
// exec.Check names it after the config with "-reference" appended.
func isCheckReference(plan *partition.Plan) bool {
	return strings.HasSuffix(plan.Config.Name, "-reference")
}
