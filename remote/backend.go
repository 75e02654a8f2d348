package remote

import (
	"fmt"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
)

// BackendEngine is the exec engine over the registered backend name (on
// GPU 0 for cuda): what `partbench serve` serves and local mode runs.
func BackendEngine(name string) (*ExecEngine, error) {
	b, err := backend.Default().ForRun(name)
	if err != nil {
		return nil, fmt.Errorf("--backend: %w", err)
	}
	rank, err := b.New(launch.Env{LocalSize: 1})
	if err != nil {
		return nil, fmt.Errorf("--backend %s: %w", b.Name, err)
	}
	return &ExecEngine{Backend: b.Name, New: func(plan *partition.Plan) (pexec.Compute, error) {
		if b.Admit != nil {
			if err := b.Admit(plan); err != nil {
				return nil, err
			}
		}
		return rank.NewCompute(plan, 0)
	}}, nil
}
