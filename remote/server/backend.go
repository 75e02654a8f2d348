package server

import (
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
)

// BackendEngine is the exec engine over the registered backend name (on
// GPU 0 for cuda): what `partbench serve` serves and local mode runs. The
// server's plans are one rank each, so it loads no communicator: a GPU
// server needs the CUDA driver, not NCCL.
func BackendEngine(name string) (*ExecEngine, error) {
	b, newCompute, err := backend.Default().DeviceCompute(name, launch.Env{Size: 1, LocalSize: 1})
	if err != nil {
		return nil, err
	}
	return &ExecEngine{Backend: b.Name, New: func(plan *partition.Plan) (pexec.Compute, error) {
		if b.Admit != nil {
			if err := b.Admit(plan); err != nil {
				return nil, err
			}
		}
		return newCompute(plan, 0)
	}}, nil
}
