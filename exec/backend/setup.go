package backend

import (
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
)

// Setup is what a rank runs cfg with: the chosen backend's name, the Plan
// as the backend computes it (built once: every rank and the comparison use
// it), the rank's constructors, and notes on what the backend changed.
type Setup struct {
	Name  string
	Plan  *partition.Plan
	Rank  Rank
	Notes []string
}

// Setup resolves --backend name for a run (ForRun), makes the constructors
// of the rank env describes (failing before any rank joins when a library
// is missing), and prepares the Plan (Prepare).
func (r *Registry) Setup(name string, cfg *configs.Config, env launch.Env) (Setup, error) {
	b, err := r.ForRun(name)
	if err != nil {
		return Setup{}, err
	}
	rank, err := b.New(env)
	if err != nil {
		return Setup{}, err
	}
	plan, notes, err := Prepare(b, cfg)
	if err != nil {
		return Setup{}, err
	}
	return Setup{Name: b.Name, Plan: plan, Rank: rank, Notes: notes}, nil
}
