package configs

import (
	"errors"
	"fmt"

	"github.com/partbench/partbench/arch"
)

// Limits on what one config may ask for. They bound the time and memory of
// an estimate or a search (docs/reliability.md, "Inputs and limits";
// measured in docs/measurements/limits.md) and are far beyond any model
// built: the largest published dense models have under 200 layers, the
// largest training jobs ≈ 100,000 GPUs, the longest contexts ≈ 10M tokens.
const (
	MaxLayers       = 1000
	MaxGPUs         = 100_000
	MaxContext      = 10_000_000
	MaxBatch        = 1 << 20
	MaxMicrobatches = 4096
	MaxHidden       = 1 << 20
	MaxFFN          = 1 << 22
	MaxVocab        = 1 << 24
	MaxHeads        = 1 << 12
	MaxTP           = 1 << 12
)

// Validate checks every field and returns all problems found, each naming the
// field, the value and what is allowed.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	rangeInt := func(field string, v, lo, hi int) bool {
		if v < lo || v > hi {
			add("%s: must be in [%d, %d] (got %d)", field, lo, hi, v)
			return false
		}
		return true
	}

	if c.Version != SchemaVersion {
		add("version: this build reads schema version %d (got %d)", SchemaVersion, c.Version)
	}

	m := c.Model
	rangeInt("model.layers", m.Layers, 1, MaxLayers)
	rangeInt("model.hidden", m.Hidden, 1, MaxHidden)
	okHeads := rangeInt("model.heads", m.Heads, 1, MaxHeads)
	okKV := rangeInt("model.kv_heads", m.KVHeads, 1, MaxHeads)
	rangeInt("model.head_dim", m.HeadDim, 1, 1<<12)
	okFFN := rangeInt("model.ffn", m.FFN, 1, MaxFFN)
	if m.Embeddings || m.LMHead {
		rangeInt("model.vocab", m.Vocab, 1, MaxVocab)
	} else if m.Vocab < 0 {
		add("model.vocab: must be ≥ 0 (got %d)", m.Vocab)
	}
	if okHeads && okKV && m.Heads%m.KVHeads != 0 {
		add("model.kv_heads: must divide model.heads = %d (got %d)", m.Heads, m.KVHeads)
	}
	if _, err := arch.ParseDType(m.DType); err != nil {
		add("model.dtype: must be one of fp32, fp16, bf16, fp8 (got %q)", m.DType)
	}

	w := c.Workload
	rangeInt("workload.batch", w.Batch, 1, MaxBatch)
	if rangeInt("workload.context", w.Context, 2, MaxContext) &&
		rangeInt("workload.output_tokens", w.OutputTokens, 1, w.Context-1) && w.OutputTokens == 1 {
		add("workload.output_tokens: must be ≥ 2: one output token is the prefill alone, with no decode step to give a TPOT or TPS (for the prefill alone set phases = [\"prefill\"] and any output_tokens ≥ 2) (got 1)")
	}
	for i, p := range w.Phases {
		if p != "prefill" && p != "decode" {
			add("workload.phases[%d]: must be \"prefill\" or \"decode\" (got %q)", i, p)
		}
	}

	perrs, okLayout := c.parallelErrs(okHeads, okKV, okFFN, len(errs))
	errs = append(errs, perrs...)

	if err := c.Hardware.GPU.Validate("hardware"); err != nil {
		errs = append(errs, err)
	} else if c.Hardware.PeakFLOPsPerS(m.DType) == 0 && m.DType != "" {
		add("model.dtype: %s is not supported by hardware %q (its %s peak is 0)", m.DType, c.Hardware.Name, m.DType)
	}
	if err := ValidateOpTimes("hardware.op_time", c.Hardware.OpTimes); err != nil {
		errs = append(errs, err)
	}
	if c.Hardware.HostCores < 0 {
		add("hardware.host_cores: must be ≥ 0 (0: each rank has its own device) (got %d)", c.Hardware.HostCores)
	}
	if err := c.Topology.Topology.Validate("topology"); err != nil {
		errs = append(errs, err)
	} else if n := c.Topology.Size(); n > MaxGPUs {
		add("topology: nodes × gpus_per_node = %d × %d = %d GPUs, more than the %d allowed", c.Topology.Nodes, c.Topology.GPUsPerNode, n, MaxGPUs)
	} else if okLayout {
		if err := c.layoutOnTopology(); err != nil {
			errs = append(errs, err)
		}
	}

	if c.Run.Warmup < 0 || c.Run.Warmup > 1<<20 {
		add("run.warmup: must be in [0, %d] (got %d)", 1<<20, c.Run.Warmup)
	}
	rangeInt("run.iterations", c.Run.Iterations, 1, 1<<20)
	errs = append(errs, c.validateArch()...)
	return errors.Join(errs...)
}

// parallelErrs is Validate's checks of the parallel section, in Validate's
// order; ok says tp, pp and dp are each in range, so the layout can be held
// against the topology (layoutOnTopology). okHeads, okKV and okFFN say the
// model's widths were in range; prior counts the errors found before.
func (c *Config) parallelErrs(okHeads, okKV, okFFN bool, prior int) (errs []error, ok bool) {
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	rangeInt := func(field string, v, lo, hi int) bool {
		if v < lo || v > hi {
			add("%s: must be in [%d, %d] (got %d)", field, lo, hi, v)
			return false
		}
		return true
	}
	m, w, p := c.Model, c.Workload, c.Parallel
	okTP := rangeInt("parallel.tp", p.TP, 1, MaxTP)
	okPP := rangeInt("parallel.pp", p.PP, 1, MaxLayers)
	// A Config built in code may leave DP 0: one replica, as in a file.
	if p.DP == 0 {
		p.DP = 1
	}
	okDP := rangeInt("parallel.dp", p.DP, 1, MaxGPUs)
	if okTP {
		if bad := m.TPIndivisible(p.TP); len(bad) > 0 {
			valid := map[string]bool{"heads": okHeads, "kv_heads": okKV, "ffn": okFFN}
			for _, w := range bad {
				if valid[w.Key] {
					add("parallel.tp: must divide model.%s = %d (got %d)", w.Key, w.Size, p.TP)
				}
			}
		}
	}
	if okPP && m.Layers >= 1 && p.PP > m.Layers {
		add("parallel.pp: must be ≤ model.layers = %d (got %d)", m.Layers, p.PP)
	}
	if rangeInt("parallel.microbatches", p.Microbatches, 1, MaxMicrobatches) && w.Batch >= 1 && w.Batch%p.Microbatches != 0 {
		add("parallel.microbatches: must divide workload.batch = %d (got %d)", w.Batch, p.Microbatches)
	}
	if len(p.LayerMap) > 0 {
		if len(p.LayerMap) != m.Layers {
			add("parallel.layer_map: must list a stage for each of the %d layers (got %d entries)", m.Layers, len(p.LayerMap))
		} else {
			next := 0
			for i, s := range p.LayerMap {
				if s != next && s != next-1 || s < 0 || s >= p.PP {
					add("parallel.layer_map[%d]: stages must start at 0, never decrease, skip none and stay below parallel.pp = %d (got %d after %d)", i, p.PP, s, next-1)
					break
				}
				next = s + 1
			}
			if next != p.PP && prior+len(errs) == 0 {
				add("parallel.layer_map: uses %d stages, parallel.pp is %d", next, p.PP)
			}
		}
	}
	switch p.Schedule {
	case "fill-drain", "1f1b":
	default:
		add("parallel.schedule: must be \"fill-drain\" or \"1f1b\" (got %q)", p.Schedule)
	}
	switch p.PassBuffers {
	case "", PassBuffersShared, PassBuffersPerMicrobatch:
	default:
		add("parallel.pass_buffers: must be %q or %q (got %q)", PassBuffersShared, PassBuffersPerMicrobatch, p.PassBuffers)
	}
	if p.PrefillChunk < 0 || (w.Context > w.OutputTokens && p.PrefillChunk > w.PromptTokens()) {
		add("parallel.prefill_chunk: must be in [0, prompt tokens = %d] (got %d)", w.PromptTokens(), p.PrefillChunk)
	}
	return errs, okTP && okPP && okDP
}

// layoutOnTopology holds tp × pp × dp, each in range, against a valid
// topology: the GPU count and replicas aligned on nodes (ReplicasAlign).
func (c *Config) layoutOnTopology() error {
	p := c.Parallel
	if p.DP == 0 { // one replica, as in parallelErrs
		p.DP = 1
	}
	if p.TP*p.PP*p.DP != c.Topology.Size() {
		layout := fmt.Sprintf("tp × pp = %d × %d", p.TP, p.PP)
		if p.DP != 1 {
			layout = fmt.Sprintf("tp × pp × dp = %d × %d × %d", p.TP, p.PP, p.DP)
		}
		return fmt.Errorf("parallel: %s = %d GPUs, but topology %q has %d (nodes %d × gpus_per_node %d)",
			layout, p.TP*p.PP*p.DP, c.Topology.Name, c.Topology.Size(), c.Topology.Nodes, c.Topology.GPUsPerNode)
	}
	if !ReplicasAlign(p.TP*p.PP, p.DP, c.Topology.GPUsPerNode) {
		return fmt.Errorf("parallel.dp: with dp = %d a replica of tp × pp = %d GPUs must fill whole nodes or divide a node's %d GPUs, so every replica has the same links (got %d)",
			p.DP, p.TP*p.PP, c.Topology.GPUsPerNode, p.DP)
	}
	return nil
}

// ValidateLayout is Validate for a config that equals one Validate accepted
// but for its name and parallel section: a search's candidates, built from
// one validated config, are checked this way. It runs only the checks that
// read the parallel section (parallelErrs, layoutOnTopology); when any of
// them fails it returns Validate's whole error, so the messages and their
// order are Validate's. A config from a user, a file or a flag goes
// through Validate.
func (c *Config) ValidateLayout() error {
	if errs, ok := c.parallelErrs(true, true, true, 0); len(errs) == 0 && ok && c.layoutOnTopology() == nil {
		return nil
	}
	return c.Validate()
}

// ReplicasAlign reports whether dp replicas of a group of size GPUs each lie
// the same way on nodes of perNode GPUs: one replica (dp = 1), a group that
// divides a node, or one made of whole nodes. Then every replica sees the
// same links and one replica's timeline stands for all (docs/costmodel.md).
func ReplicasAlign(size, dp, perNode int) bool {
	return dp == 1 || perNode%size == 0 || size%perNode == 0
}
