package hf

import (
	"context"
	"errors"
	"sync"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/checkpoint/shards"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Weights makes a rank's shards given its model.Shard: the checkpoint's
// slices of that shard (Model.Shards).
type Weights = func(s model.Shard) (model.Source, error)

// NewCommFunc connects one launched rank (exec.GenerateRankOptions.NewComm).
type NewCommFunc = func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c pexec.Compute) (pexec.Comm, error)

// Backend is what a compute backend supplies to the workflow.
type Backend struct {
	// Name is the backend's --backend name ("cpu", "cuda").
	Name string
	// DType is the element type the backend computes and stores in
	// ("fp32", "fp16", "bf16").
	DType string
	// NewCompute builds rank's Compute of plan whose weights come from
	// weights (nil: the seeded model) and whose token ids are in's (nil:
	// the seeded schedule); it must implement exec.Inspector.
	NewCompute func(plan *partition.Plan, rank int, weights Weights, in *model.Inputs) (pexec.Compute, error)
	// NewComms connects size ranks in this process.
	NewComms func(size int) []pexec.Comm
	// NewComm connects one launched rank (one process per rank); nil: the
	// backend runs in-process only.
	NewComm NewCommFunc
	// Tolerance bounds its outputs against the fp32 CPU reference,
	// |Δ| / max(1, |ref|) (0: exec.DefaultTolerance).
	Tolerance float64
	// ReferenceTolerance bounds its logits against an independent fp32
	// implementation's (transformers' reference.json), |Δ| / max(1, |ref|):
	// docs/numerics.md's table.
	ReferenceTolerance float64
	// LaunchedDType is the plan's element type on launched ranks, whose
	// communicators count the bytes the backend moves ("": fp32). In one
	// process the plan is fp32, as exec.Check's: in-process communicators
	// stage values through the host as float32.
	LaunchedDType string
}

func (b Backend) check() error {
	if b.NewCompute == nil || b.NewComms == nil {
		return errors.New("hf: the backend supplies no NewCompute or NewComms")
	}
	return nil
}

// Model is one model directory read once: its config.json and its mmapped
// safetensors. Ranks read their slices from the mapping.
type Model struct {
	Dir     string
	Config  *checkpoint.Config
	Weights *checkpoint.Weights

	mu      sync.Mutex
	sharded []*shards.Sharded // pre-sharded files opened by Shards
}

// Open reads dir's config.json and maps its safetensors (checked against
// the config tensor by tensor as each rank reads its slices).
func Open(dir string) (*Model, error) {
	hf, err := checkpoint.ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	return open(dir, hf)
}

// OpenFor maps the safetensors of dir with the description cfg already
// holds (configs read config.json once when it built cfg); a cfg without one
// reads it (Open).
func OpenFor(cfg *configs.Config, dir string) (*Model, error) {
	if d := cfg.Model.Description(); d != nil {
		return open(dir, d)
	}
	return Open(dir)
}

func open(dir string, hf *checkpoint.Config) (*Model, error) {
	w, err := checkpoint.OpenWeights(dir)
	if err != nil {
		return nil, err
	}
	return &Model{Dir: dir, Config: hf, Weights: w}, nil
}

// Close unmaps the weights and every pre-sharded file Shards opened.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.Weights.Close()
	for _, f := range m.sharded {
		err = errors.Join(err, f.Close())
	}
	m.sharded = nil
	return err
}

// Shards are the slices of shard s: from the model directory's pre-sharded
// file of s where `partbench shard` wrote one (shards.Sharded: the rank's
// tensors as one run of its own file, laid out already), else from the
// checkpoint, shards.Source reading only the rows or columns s holds, the
// rank's whole list at once where the backend prefetches it
// (shards.Source.Prefetch), else tensor by tensor as it asks. A
// pre-sharded file written from other checkpoint files is an error.
func (m *Model) Shards(s model.Shard) (model.Source, error) {
	f, err := shards.OpenSharded(m.Dir, m.Weights, s)
	if err != nil {
		return nil, err
	}
	if f != nil {
		m.mu.Lock()
		m.sharded = append(m.sharded, f)
		m.mu.Unlock()
		return f, nil
	}
	return shards.New(m.Weights, m.Config, s), nil
}

// ShardedFiles is the pre-sharded files Shards has read so far.
func (m *Model) ShardedFiles() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, f := range m.sharded {
		out = append(out, f.Path())
	}
	return out
}

// Computes is b's NewCompute with m's slices as each rank's weights.
func (m *Model) Computes(b Backend) func(plan *partition.Plan, rank int, in *model.Inputs) (pexec.Compute, error) {
	return func(plan *partition.Plan, rank int, in *model.Inputs) (pexec.Compute, error) {
		return b.NewCompute(plan, rank, m.Shards, in)
	}
}
