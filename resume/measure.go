package resume

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/topology"
)

// MeasureOptions are `partbench resume`'s choices; the field comments name
// the flags that set them.
type MeasureOptions struct {
	Config     string // --config: file or preset, fp32
	Backend    string // --backend: cpu or cuda
	Layers     string // --layers: pause layers, 1-based, comma-separated
	Strategies string // --strategies: recompute, offload, stateful
	Link       string // --remote-link: the modeled stateful request's client link
	Trials     int    // --trials
	Warmup     int    // --warmup
	Perturb    bool   // --perturb
	// PerturbSeed seeds --perturb's modification (--perturb-seed).
	PerturbSeed uint64
	// Conn is the stateful strategy's server.
	Conn remote.ConnectOptions
}

// Setup is what Prepare read from MeasureOptions.
type Setup struct {
	Plan       *partition.Plan
	Layers     []int
	Strategies []string
	Link       topology.ClientLink
}

// ParseLayers reads a comma-separated list of positive layers given by flag.
func ParseLayers(flag, s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive layer number (e.g. 1,10,20)", flag, p)
		}
		out = append(out, n)
	}
	return out, nil
}

// stateful says whether strategies include the server's.
func stateful(strategies []string) bool { return slices.Contains(strategies, partition.ResumeStateful) }

// Prepare checks o's flags (backend, layers, strategies, server, link) and
// plans its config, which must be float32: the pause and resume are (on
// the GPU too, so every resumed output is checked bit for bit).
func Prepare(o MeasureOptions) (*Setup, error) {
	if o.Backend != configs.BackendCPU && o.Backend != configs.BackendCUDA {
		return nil, fmt.Errorf("--backend %q: must be cpu or cuda", o.Backend)
	}
	layers, err := ParseLayers("--layers", o.Layers)
	if err != nil {
		return nil, err
	}
	s := &Setup{Layers: layers, Strategies: strings.Split(o.Strategies, ",")}
	for _, st := range s.Strategies {
		if !slices.Contains(partition.ResumeStrategies, st) {
			return nil, fmt.Errorf("--strategies: %q: must be one of %s", st, strings.Join(partition.ResumeStrategies, ", "))
		}
	}
	if err := o.Conn.Check("resume", stateful(s.Strategies), "--strategies stateful"); err != nil {
		return nil, err
	}
	if s.Link, err = topology.ParseClientLink("--remote-link", o.Link); err != nil {
		return nil, err
	}
	cfg, err := configs.Load(o.Config)
	if err != nil {
		return nil, err
	}
	if s.Plan, err = partition.NewPlan(cfg); err != nil {
		return nil, err
	}
	if s.Plan.DTypeBytes != 4 {
		return nil, fmt.Errorf("--config %s: model.dtype is %s; pause and resume are float32 (use test/llama2-13b-2k-tiny, or a copy with model.dtype = \"fp32\"); `partbench model --dry-run --resume-layers` models the full shape", cfg.Name, s.Plan.Model.DType)
	}
	return s, nil
}

// NewCompute is the Compute of o's backend for s's one-rank plan, made
// through the backend registry (GPU 0 for cuda, which needs the CUDA driver
// and no NCCL); its errors name the missing driver.
func NewCompute(s *Setup, o MeasureOptions) (pexec.Compute, error) {
	b, newCompute, err := backend.Default().DeviceCompute(o.Backend, launch.Env{Size: 1, LocalSize: 1})
	if err != nil {
		return nil, err
	}
	if b.Admit != nil {
		if err := b.Admit(s.Plan); err != nil {
			return nil, err
		}
	}
	return newCompute(s.Plan, 0)
}

// serverFor is o's connection with a spawned server serving o's backend:
// `--backend B` after the spawned child's own `--backend cpu` (the last one
// counts).
func serverFor(o MeasureOptions) remote.ConnectOptions {
	c := o.Conn
	if c.Spawn && o.Backend != "" && o.Backend != configs.BackendCPU {
		c.SpawnArgs = append(slices.Clone(c.SpawnArgs), "--backend", o.Backend)
	}
	return c
}

// Measure runs s's strategies on compute (recompute, offload and the
// reference) and, for stateful, on the server of o.Conn (a spawned child's
// stderr to stderr; it serves o's backend), with o's trials and
// modification.
func Measure(ctx context.Context, s *Setup, o MeasureOptions, compute pexec.Compute, stderr io.Writer) (*Result, error) {
	ro := Options{Layers: s.Layers, Strategies: s.Strategies, Trials: o.Trials, Warmup: o.Warmup, Addr: o.Conn.Server, Backend: o.Backend}
	o.Conn = serverFor(o)
	var err error
	if ro.Local, err = NewLocal(s.Plan, compute); err != nil {
		return nil, err
	}
	if o.Perturb {
		ro.Delta = Perturb(o.PerturbSeed, s.Plan.Model.Hidden, 0.1)
	}
	if stateful(s.Strategies) {
		c, err := remote.Connect(ctx, o.Conn, stderr)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		ro.Addr = c.Addr
		if ro.Session, err = c.Open(ctx, s.Plan.Config, partition.RemoteStateful, partition.RemoteOptions{Logits: true}); err != nil {
			return nil, fmt.Errorf("--server %s: %w", ro.Addr, err)
		}
	}
	return Run(ctx, s.Plan, ro)
}
