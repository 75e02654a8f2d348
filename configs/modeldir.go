package configs

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/topology"
)

// ModelFromDescription is the model a Hugging Face config.json describes
// (its family, shape and options), with its embedding and LM head, in dtype
// (empty: the checkpoint's own dtype when it names fp32, fp16 or bf16, else
// fp16). The model keeps d (Model.Description).
func ModelFromDescription(d *arch.Description, dtype string) Model {
	m := Model{
		Name: d.Architecture, Layers: d.Layers, Hidden: d.Hidden, Heads: d.Heads, KVHeads: d.KVHeads,
		HeadDim: d.HeadDim, FFN: d.FFN, GatedMLP: d.GatedMLP, Vocab: d.Vocab, Embeddings: true, LMHead: true,
		DType: dtype,
	}
	m.Arch, m.NormEps, m.TiedEmbeddings, m.desc = d.Family.Name, d.NormEps, d.TieWordEmbeddings, d
	if d.LearnedPositions {
		m.MaxPositions = d.MaxPositions
	} else {
		m.RopeTheta = d.RopeTheta
	}
	if m.DType == "" {
		m.DType = arch.FP16.String()
		if d.DType.Valid() {
			m.DType = d.DType.String()
		}
	}
	return m
}

// shapeKeys are the [model] fields config.json sets; a file that names
// model.dir may not set them too.
var shapeKeys = []string{"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "gated_mlp", "vocab",
	"arch", "norm_eps", "rope_theta", "max_positions", "tied_embeddings", "preset"}

// resolveModelDir fills the model from model.dir's config.json (relative to
// the config file's directory when the file is on disk), read once. md is
// the file's own decode; shape keys it gives beside model.dir are refused.
func (c *Config) resolveModelDir(md toml.MetaData) error {
	dir := c.Model.Dir
	if dir == "" {
		return nil
	}
	var dup []string
	for _, k := range shapeKeys {
		if md.IsDefined("model", k) {
			dup = append(dup, "model."+k)
		}
	}
	if len(dup) > 0 {
		return fmt.Errorf("%s: model.dir = %q gives the model's shape; remove %s", c.Source, dir, strings.Join(dup, ", "))
	}
	if !filepath.IsAbs(dir) && !strings.HasPrefix(c.Source, "preset:") && c.Source != "" {
		dir = filepath.Join(filepath.Dir(c.Source), dir)
	}
	d, err := arch.ReadConfig(dir)
	if err != nil {
		return fmt.Errorf("%s: model.dir = %q: %w", c.Source, c.Model.Dir, err)
	}
	c.setModelDir(d, dir, c.Model.DType, c.Model.Name, c.Model.Encoder)
	return nil
}

// setModelDir makes c's model the one d describes, read from dir, in dtype
// (empty: the checkpoint's), named name (empty: d's architecture), run as an
// encoder or not (how the model is run, not its shape).
func (c *Config) setModelDir(d *arch.Description, dir, dtype, name string, encoder bool) {
	m := ModelFromDescription(d, dtype)
	m.Dir, m.Encoder = dir, encoder
	if name != "" {
		m.Name = name
	}
	c.Model = m
}

// GenerateConfig is the config `partbench generate` runs: the model of the
// Hugging Face directory dir (absolute), seqs sequences whose prompts and
// newTokens generated tokens fill context, fp32, tp × pp in-process ranks
// with micro-batches; the topology is a stand-in (one node of tp × pp
// devices) since generation is measured for its numbers, not its time.
// config.json is read once; the model keeps it (Model.Description).
func GenerateConfig(dir string, seqs, context, newTokens, tp, pp, microbatches int) (*Config, error) {
	c := &Config{Name: "generate", Source: "--model-dir " + dir}
	d, err := arch.ReadConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: model.dir = %q: %w", c.Source, dir, err)
	}
	c.setModelDir(d, dir, arch.FP32.String(), "", false)
	// One new token is the prefill's alone: exec.generatePlan runs it as a
	// prefill-only workload, whose output_tokens must still be ≥ 2.
	c.Workload = Workload{Batch: seqs, Context: max(context, 2), OutputTokens: max(newTokens, 2)}
	c.Parallel = Parallel{TP: tp, PP: pp, Microbatches: microbatches}
	if err := c.hardwarePreset("h100-sxm"); err != nil {
		return nil, err
	}
	c.Topology.Topology = topology.Topology{Name: "in-process", Nodes: 1, GPUsPerNode: tp * pp,
		Intra: topology.Link{Class: topology.NVLink, Name: "in-process", BytesPerS: 450e9, LatencyS: 1e-6}}
	c.Run = Run{Iterations: 1}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return c, nil
}

// hardwarePreset sets c's hardware to the embedded preset name.
func (c *Config) hardwarePreset(name string) error {
	c.Hardware = Hardware{Preset: name}
	return decodePreset(c.Source, "hardware", name, &c.Hardware)
}

// ModelDirRun describes a run of a Hugging Face model directory built from
// command-line flags instead of a config file: the model from config.json
// (no weights are read), the workload and the partitioning given, on
// H100 SXM GPUs in DGX H100 nodes (8 per node on NVSwitch, NDR InfiniBand
// between nodes) — the seed's machine.
type ModelDirRun struct {
	Dir                          string // the model directory (absolute or relative to the working directory)
	TP, PP, Microbatches         int    // 0: 1
	LayerMap                     []int  // optional stage of each layer
	Batch, Context, OutputTokens int    // 0: 1, min(2048, max positions), min(128, context/2)
	// Encoder runs the model as an encoder: bidirectional attention, one
	// forward pass over the prompt (phases = ["prefill"]).
	Encoder bool
	// DType is the element type ("": the checkpoint's torch_dtype).
	DType string
	// Desc is the directory's config.json when it has been read already
	// (Partitionings passes it on); nil: Config reads it.
	Desc *arch.Description
}

// GPUsPerDGXNode is the GPUs of one DGX H100 node (NVIDIA DGX H100 user
// guide: 8 H100 SXM5 on NVSwitch).
const GPUsPerDGXNode = 8

// Config is the validated config of r; its source in errors is "--model-dir DIR".
// config.json is read once (not at all when r.Desc is set) and kept by the
// model (Model.Description).
func (r ModelDirRun) Config() (*Config, error) {
	tp, pp, mbs := max(r.TP, 1), max(r.PP, 1), max(r.Microbatches, 1)
	ranks := tp * pp
	nodes, perNode := 1, ranks
	if ranks > GPUsPerDGXNode {
		if ranks%GPUsPerDGXNode != 0 {
			return nil, fmt.Errorf("--model-dir %s: tp × pp = %d × %d = %d GPUs do not fill DGX nodes of %d; allowed: at most %d, or a multiple of %d",
				r.Dir, tp, pp, ranks, GPUsPerDGXNode, GPUsPerDGXNode, GPUsPerDGXNode)
		}
		nodes, perNode = ranks/GPUsPerDGXNode, GPUsPerDGXNode
	}
	c := &Config{Name: r.name(tp, pp, mbs), Source: "--model-dir " + r.Dir}
	d := r.Desc
	if d == nil {
		var err error
		if d, err = arch.ReadConfig(r.Dir); err != nil {
			return nil, fmt.Errorf("%s: model.dir = %q: %w", c.Source, r.Dir, err)
		}
	}
	batch, context, out := max(r.Batch, 1), r.Context, r.OutputTokens
	if context == 0 {
		context = 2048
		if d.MaxPositions > 0 {
			context = min(context, d.MaxPositions)
		}
	}
	if out == 0 {
		out = max(min(128, context/2), 2)
	}
	c.setModelDir(d, r.Dir, r.DType, "", r.Encoder)
	c.Workload = Workload{Batch: batch, Context: context, OutputTokens: out, Phases: []string{"prefill", "decode"}}
	if r.Encoder {
		c.Workload.Phases = []string{"prefill"}
	}
	c.Parallel = Parallel{TP: tp, PP: pp, Microbatches: mbs, LayerMap: r.LayerMap}
	if err := c.hardwarePreset("h100-sxm"); err != nil {
		return nil, err
	}
	c.Topology = Topology{Preset: "dgx-h100x2"}
	if err := decodePreset(c.Source, "topology", c.Topology.Preset, &c.Topology); err != nil {
		return nil, err
	}
	c.Topology.Name, c.Topology.Nodes, c.Topology.GPUsPerNode = fmt.Sprintf("dgx-h100x%d", nodes), nodes, perNode
	c.Run = Run{Iterations: 1}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return c, nil
}

// name is the run's name: the directory's base name and the partitioning.
func (r ModelDirRun) name(tp, pp, mbs int) string {
	n := fmt.Sprintf("%s-tp%dpp%d", filepath.Base(r.Dir), tp, pp)
	if r.LayerMap != nil {
		n = fmt.Sprintf("%s-layerwise%d", filepath.Base(r.Dir), pp)
	}
	if mbs > 1 {
		n += fmt.Sprintf("-mb%d", mbs)
	}
	return n
}

// Partitionings are the runs of r under every partitioning of at most
// maxRanks ranks that m's shape allows: tp a power of two dividing the
// heads, KV heads and FFN width; pp a power of two up to the layers (one
// micro-batch per sequence when pp > 1 and the batch allows it); and
// layer-wise (a stage per layer, layer_map) when the layers fit in
// maxRanks. The first is the single rank.
func (r ModelDirRun) Partitionings(m Model, maxRanks int) []ModelDirRun {
	var out []ModelDirRun
	for tp := 1; tp <= maxRanks; tp *= 2 {
		if len(m.TPIndivisible(tp)) > 0 {
			continue
		}
		for pp := 1; tp*pp <= maxRanks && pp <= m.Layers; pp *= 2 {
			p := r
			p.TP, p.PP, p.LayerMap, p.Microbatches = tp, pp, nil, 1
			p.Desc = cmp.Or(m.Description(), r.Desc)
			if pp > 1 && max(r.Batch, 1)%pp == 0 {
				p.Microbatches = pp
			}
			out = append(out, p)
		}
	}
	if m.Layers >= 2 && m.Layers <= maxRanks {
		p := r
		p.TP, p.PP, p.Microbatches = 1, m.Layers, 1
		p.Desc = cmp.Or(m.Description(), r.Desc)
		p.LayerMap = make([]int, m.Layers)
		for i := range p.LayerMap {
			p.LayerMap[i] = i
		}
		if b := max(r.Batch, 1); b%m.Layers == 0 {
			p.Microbatches = m.Layers
		}
		out = append(out, p)
	}
	return out
}
