package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Auto is the name that asks the registry to choose.
const Auto = "auto"

// NewComputeFunc makes rank's Compute for a plan.
type NewComputeFunc = func(plan *partition.Plan, rank int) (exec.Compute, error)

// NewCommFunc makes rank's communicator; it may queue on the rank's Compute
// and use the rendezvous session to exchange addresses or ids.
type NewCommFunc = func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c exec.Compute) (exec.Comm, error)

// Rank holds one rank's constructors, what exec.RunOptions takes.
type Rank struct {
	NewCompute NewComputeFunc
	NewComm    NewCommFunc
}

// Backend is one registered backend.
type Backend struct {
	// Name is what --backend names it by ("cpu", "cuda").
	Name string
	// Auto marks a backend "auto" may choose for a run when its Probe passes.
	Auto bool
	// Reference marks the backend that computes the reference outputs of a
	// check on any machine; a check with "auto" runs on it.
	Reference bool
	// Probe says why the backend cannot run here, or nil (nil Probe: it
	// always can).
	Probe func() error
	// Adapt changes what the config asks for to what the backend computes
	// (the CPU computes in fp32), before the Plan is built; the notes say
	// what was changed. Nil: nothing to adapt.
	Adapt func(cfg *configs.Config) []string
	// Admit refuses a Plan the backend cannot hold (nil: any).
	Admit func(plan *partition.Plan) error
	// New returns the constructors of the rank described by env; it fails at
	// once, before any rank joins, when a library the backend needs is missing.
	New func(env launch.Env) (Rank, error)
	// Device returns the constructor of a Compute that communicates with no
	// other rank (a one-rank server, a pause and resume, a measurement): it
	// loads what computing needs and no communicator (the GPU backend needs
	// no NCCL for it). Nil: New's NewCompute.
	Device func(env launch.Env) (NewComputeFunc, error)
	// Check returns the options of an in-process check in dtype ("": the
	// backend's default); nil when the backend has no check.
	Check func(dtype string) exec.CheckOptions
	// Checkpoint returns the backend's part of the Hugging Face workflow
	// (exec/hf) with o for the process env describes; it fails, naming the
	// flag or the missing library, when the backend cannot compute in
	// o.DType, take o's other options or run here (checkpoint.go). Nil: the
	// backend reads no checkpoints.
	Checkpoint func(o CheckpointOptions, env launch.Env) (hf.Backend, error)
	// Inputs returns the constructor of a Compute that feeds in's token ids
	// (prompts, then greedy decoding) instead of the seeded schedule, for
	// ranks run in this process (Registry.InputsCompute). Nil: it cannot.
	Inputs func(in *model.Inputs) NewComputeFunc
	// L2Probe opens the backend's working-set reuse probe on its device
	// (Registry.L2Probe, `l2 --measure`). Nil: it has none.
	L2Probe func(o L2ProbeOptions) (L2Prober, error)
	// Calibrator opens the backend's device calibrator (calibrator.go,
	// Registry.Calibrator, `calibrate`). Nil: it has none.
	Calibrator func(o CalibratorOptions) (Calibrator, error)
	// Untimed returns the constructor of a Compute like Device's that times
	// no op, for a caller that times the ops itself (Registry.UntimedCompute,
	// calibrate's op-time table). Nil: it has none.
	Untimed func(env launch.Env) (NewComputeFunc, error)
	// Launches counts what the backend's Compute queues one by one for
	// plan's rank, without a device (launches.go, Registry.LaunchCounter,
	// the serving model of the GPU engine). Nil: it does not count them.
	Launches func(plan *partition.Plan, rank int) LaunchCounter
}

// Registry holds backends in registration order, the order "auto" tries them.
type Registry struct {
	backends []Backend
}

// Register adds b; a name already registered, "auto" or an empty name, or a
// backend without New is an error.
func (r *Registry) Register(b Backend) error {
	switch {
	case b.Name == "" || b.Name == Auto:
		return fmt.Errorf("backend: cannot register a backend named %q", b.Name)
	case b.New == nil:
		return fmt.Errorf("backend %s: no constructor", b.Name)
	}
	if _, ok := r.lookup(b.Name); ok {
		return fmt.Errorf("backend %s: registered twice", b.Name)
	}
	r.backends = append(r.backends, b)
	return nil
}

// Names are the registered names, in registration order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.backends))
	for i, b := range r.backends {
		out[i] = b.Name
	}
	return out
}

func (r *Registry) lookup(name string) (Backend, bool) {
	for _, b := range r.backends {
		if b.Name == name {
			return b, true
		}
	}
	return Backend{}, false
}

// unknown names the flag's allowed values: "must be cuda, cpu or auto".
func (r *Registry) unknown(name string) error {
	return fmt.Errorf("--backend: must be %s or %s (got %q)", strings.Join(r.Names(), ", "), Auto, name)
}

// ForRun resolves --backend for a run. A named backend is returned as is
// (its libraries are looked for by New). "auto" is the first backend marked
// Auto whose probe passes; when none passes, the error gives each probe's
// cause and names the backends auto does not choose (--backend cpu).
func (r *Registry) ForRun(name string) (Backend, error) {
	if name != Auto {
		if b, ok := r.lookup(name); ok {
			return b, nil
		}
		return Backend{}, r.unknown(name)
	}
	var why []string
	for _, b := range r.backends {
		if !b.Auto {
			continue
		}
		err := probe(b)
		if err == nil {
			return b, nil
		}
		why = append(why, err.Error())
	}
	var others []string
	for _, b := range r.backends {
		if !b.Auto {
			others = append(others, "--backend "+b.Name)
		}
	}
	if len(why) == 0 {
		why = append(why, "no backend is chosen automatically")
	}
	hint := ""
	if len(others) > 0 {
		hint = ": use " + strings.Join(others, " or ") + " to run on the CPU"
	}
	return Backend{}, fmt.Errorf("no GPU backend here (%s)%s", strings.Join(why, "; "), hint)
}

// ForCheck resolves --backend for an in-process check: "auto" is the
// reference backend; a named backend must have a check.
func (r *Registry) ForCheck(name string) (Backend, error) {
	if name == Auto {
		for _, b := range r.backends {
			if b.Reference && b.Check != nil {
				return b, nil
			}
		}
		return Backend{}, errors.New("--backend auto: no reference backend is registered")
	}
	b, ok := r.lookup(name)
	if !ok {
		return Backend{}, r.unknown(name)
	}
	if b.Check == nil {
		return Backend{}, fmt.Errorf("--backend %s: has no check", name)
	}
	return b, nil
}

// Available says why the backend named name cannot run here (its Probe:
// for cuda the driver that was searched for and not found, or the GPU it
// does not see), or nil; an unknown name is the --backend flag's error.
func (r *Registry) Available(name string) error {
	b, ok := r.lookup(name)
	if !ok {
		return r.unknown(name)
	}
	return probe(b)
}

// DeviceCompute resolves --backend name ("auto" as for a run) and returns
// the constructor of a Compute that communicates with no other rank on the
// device of env (Backend.Device, else New's). It fails, naming the missing
// library, when the backend cannot run here; its errors name the flag.
func (r *Registry) DeviceCompute(name string, env launch.Env) (Backend, NewComputeFunc, error) {
	b, err := r.ForRun(name)
	if err != nil {
		if name == Auto {
			return Backend{}, nil, fmt.Errorf("--backend auto: %w", err)
		}
		return Backend{}, nil, err // the flag's own error
	}
	if b.Device != nil {
		nc, err := b.Device(env)
		if err != nil {
			return Backend{}, nil, fmt.Errorf("--backend %s: %w", b.Name, err)
		}
		return b, nc, nil
	}
	rank, err := b.New(env)
	if err != nil {
		return Backend{}, nil, fmt.Errorf("--backend %s: %w", b.Name, err)
	}
	return b, rank.NewCompute, nil
}

func probe(b Backend) error {
	if b.Probe == nil {
		return nil
	}
	return b.Probe()
}

// Prepare adapts cfg to b, builds the Plan once, and lets b admit it; the
// notes say what the backend changed. Every rank and the comparison use the
// returned Plan.
func Prepare(b Backend, cfg *configs.Config) (*partition.Plan, []string, error) {
	var notes []string
	orig := *cfg
	if b.Adapt != nil {
		notes = b.Adapt(cfg)
	}
	if cb := cfg.Hardware.CalibratedBackend; cb != "" && cb != b.Name {
		notes = append(notes, fmt.Sprintf("the calibration was measured on the %s backend and this run is on %s: the model prices the machine as the %s backend saw it, so its errors measure that difference too", cb, b.Name, cb))
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return nil, nil, err
	}
	if b.Admit != nil {
		if err := b.Admit(plan); err != nil {
			return nil, nil, reconcileDType(err, &orig, cfg)
		}
	}
	return plan, notes, nil
}

// reconcileDType adds to a refusal of an adapted config (the CPU backend
// runs fp16 as float32) the memory the dry run reports for the config as
// written, so the two numbers a user sees can be told apart.
func reconcileDType(err error, orig, adapted *configs.Config) error {
	if orig.Model.DType == adapted.Model.DType {
		return err
	}
	p, perr := partition.NewPlan(orig)
	if perr != nil {
		return err
	}
	var worst int64
	for _, r := range p.Ranks {
		worst = max(worst, r.Memory.TotalBytes)
	}
	return fmt.Errorf("%w (the backend holds every value as %s, %d bytes each; 'model --dry-run' reports the config's %s, %d bytes each: %.1f GB for its largest rank)",
		err, adapted.Model.DType, partition.DTypeBytes(adapted.Model.DType), orig.Model.DType, partition.DTypeBytes(orig.Model.DType), float64(worst)/1e9)
}
