package configs

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/checkpoint"
)

// ModelFromHF is the model a Hugging Face config.json describes, with its
// embedding and LM head, in dtype (empty: the checkpoint's own dtype when it
// names fp32, fp16 or bf16, else fp16).
func ModelFromHF(c *checkpoint.Config, dtype string) Model {
	m := Model{
		Name: c.Architecture, Layers: c.Layers, Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.KVHeads,
		HeadDim: c.HeadDim, FFN: c.FFN, GatedMLP: c.GatedMLP, Vocab: c.Vocab, Embeddings: true, LMHead: true,
		DType: dtype,
	}
	m.NormEps, m.TiedEmbeddings = c.NormEps, c.TieWordEmbeddings
	switch c.Family {
	case checkpoint.GPT2:
		m.Arch, m.MaxPositions = ArchGPT2, c.MaxPositions
	default:
		m.Arch, m.RopeTheta = ArchLlama, c.RopeTheta
	}
	if m.DType == "" {
		m.DType = "fp16"
		switch c.TorchDType {
		case "float32":
			m.DType = "fp32"
		case "bfloat16":
			m.DType = "bf16"
		}
	}
	return m
}

// shapeKeys are the [model] fields config.json sets; a file that names
// model.dir may not set them too.
var shapeKeys = []string{"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "gated_mlp", "vocab",
	"arch", "norm_eps", "rope_theta", "max_positions", "tied_embeddings", "preset"}

// resolveModelDir fills the model from model.dir's config.json (relative to
// the config file's directory when the file is on disk). data is the
// config file; shape keys it gives beside model.dir are refused.
func (c *Config) resolveModelDir(data []byte) error {
	dir := c.Model.Dir
	if dir == "" {
		return nil
	}
	var file struct {
		Model map[string]any `toml:"model"`
	}
	if _, err := toml.Decode(string(data), &file); err != nil {
		return fmt.Errorf("%s: %w", c.Source, err)
	}
	var dup []string
	for _, k := range shapeKeys {
		if _, ok := file.Model[k]; ok {
			dup = append(dup, "model."+k)
		}
	}
	if len(dup) > 0 {
		return fmt.Errorf("%s: model.dir = %q gives the model's shape; remove %s", c.Source, dir, strings.Join(dup, ", "))
	}
	if !filepath.IsAbs(dir) && !strings.HasPrefix(c.Source, "preset:") && c.Source != "" {
		dir = filepath.Join(filepath.Dir(c.Source), dir)
	}
	hf, err := checkpoint.ReadConfig(dir)
	if err != nil {
		return fmt.Errorf("%s: model.dir = %q: %w", c.Source, c.Model.Dir, err)
	}
	m := ModelFromHF(hf, c.Model.DType)
	m.Dir = dir
	if c.Model.Name != "" {
		m.Name = c.Model.Name
	}
	c.Model = m
	return nil
}

// GenerateConfig is the config `partbench generate` runs: the model of the
// Hugging Face directory dir (absolute), seqs sequences whose prompts and
// newTokens generated tokens fill context, fp32, tp × pp in-process ranks
// with micro-batches; the topology is a stand-in (one node of tp × pp
// devices) since generation is measured for its numbers, not its time.
func GenerateConfig(dir string, seqs, context, newTokens, tp, pp, microbatches int) (*Config, error) {
	src := fmt.Sprintf(`version = 1
name = "generate"
[model]
dir = %q
dtype = "fp32"
[workload]
batch = %d
context = %d
output_tokens = %d
[parallel]
tp = %d
pp = %d
microbatches = %d
[hardware]
preset = "h100-sxm"
[topology]
name = "in-process"
nodes = 1
gpus_per_node = %d
[topology.intra_node]
class = "nvlink"
name = "in-process"
bytes_per_s = 450e9
latency_s = 1e-6
[run]
iterations = 1
`, dir, seqs, max(context, 2), max(newTokens, 1), tp, pp, microbatches, tp*pp)
	return Parse(strings.NewReader(src), "--model-dir "+dir)
}
