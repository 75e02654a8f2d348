package calib

import (
	"fmt"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
)

// calib reaches a backend only through exec/backend's registry: a Compute
// comes from the registered backend's Device constructor, and what calib
// needs beyond exec.Compute is an optional interface declared here, which
// the backend's Compute implements or not.

// Registry is the backend registry calib takes its Computes from
// (exec/backend's Default: the backends a run can use).
var Registry = backend.Default

// deviceCompute is the registered backend name's Compute for rank of plan
// on device (the GPU's ordinal; 0 on the CPU), communicating with no other
// rank.
func deviceCompute(name string, device int, plan *partition.Plan, rank int) (pexec.Compute, error) {
	_, nc, err := Registry().DeviceCompute(name, launch.Env{LocalRank: device})
	if err != nil {
		return nil, err
	}
	return nc(plan, rank)
}

// cpuRankZero is config's plan and the CPU backend's Compute of its rank 0,
// alone: what calibrate's per-op measurements on the host run.
func cpuRankZero(config string) (*partition.Plan, pexec.Compute, error) {
	plan, err := partition.LoadPlan(config)
	if err != nil {
		return nil, nil, err
	}
	c, err := deviceCompute(configs.BackendCPU, 0, plan, 0)
	if err != nil {
		return nil, nil, err
	}
	return plan, c, nil
}

// hostGEMM is a Compute whose GEMM can be called on bare host slices:
// out[m, n] = x[m, k] @ w[k, n], row-major (exec/cpu's: the GEMM its Gemm
// ops run).
type hostGEMM interface {
	MatMul(m, n, k int, x, w, out []float32)
}

// cpuGEMM returns the CPU backend's GEMM through a Compute of the
// one-rank overhead config, and a function that releases it.
func cpuGEMM() (hostGEMM, func() error, error) {
	_, c, err := cpuRankZero(overheadConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("GEMM: %w", err)
	}
	g, ok := c.(hostGEMM)
	if !ok {
		c.Close()
		return nil, nil, fmt.Errorf("GEMM: the %s backend's Compute (%T) has no host GEMM (MatMul)", configs.BackendCPU, c)
	}
	return g, c.Close, nil
}
