package backend

import (
	"fmt"
	"strings"

	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/model"
)

// The parts of a backend only some backends have (Backend.Inputs,
// Backend.L2Probe), reached through the registry like the rest: a caller
// names the backend, and one that lacks the part is refused by name.

// L2ProbeOptions are a device L2 probe's options (exec/cuda's).
type L2ProbeOptions = pcuda.L2ProbeOptions

// L2Reuse is one working set's reuse as a device L2 probe measures it.
type L2Reuse = pcuda.L2Reuse

// L2Prober measures working-set reuse on a backend's device
// (`l2 --measure`); Close frees it.
type L2Prober interface {
	Reuse(bytes int64) (L2Reuse, error)
	Close() error
}

// InputsCompute returns the constructor of the backend named name's Compute
// that feeds in's token ids (prompts, then greedy decoding) instead of the
// seeded schedule, for ranks run in this process. A backend without
// Backend.Inputs is refused, naming those that have it.
func (r *Registry) InputsCompute(name string, in *model.Inputs) (NewComputeFunc, error) {
	b, ok := r.lookup(name)
	if !ok {
		return nil, r.unknown(name)
	}
	if b.Inputs == nil {
		return nil, fmt.Errorf("backend %s cannot feed given token ids (backends that can: %s)", name, r.with(func(b Backend) bool { return b.Inputs != nil }))
	}
	return b.Inputs(in), nil
}

// L2Probe opens the L2 probe of the backend named name on its device. It
// fails naming the backend when it has no probe (naming those that have
// one) or cannot run here (its Probe's reason).
func (r *Registry) L2Probe(name string, o L2ProbeOptions) (L2Prober, error) {
	b, ok := r.lookup(name)
	if !ok {
		return nil, r.unknown(name)
	}
	if b.L2Probe == nil {
		return nil, fmt.Errorf("backend %s has no device L2 probe (backends with one: %s)", name, r.with(func(b Backend) bool { return b.L2Probe != nil }))
	}
	if err := probe(b); err != nil {
		return nil, fmt.Errorf("backend %s cannot run here: %w", name, err)
	}
	return b.L2Probe(o)
}

// with lists the names of the backends that satisfy has ("none" if none).
func (r *Registry) with(has func(Backend) bool) string {
	var names []string
	for _, b := range r.backends {
		if has(b) {
			names = append(names, b.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
