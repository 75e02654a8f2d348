package checkpoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestVerifyFixtures: the checkpoints transformers wrote match the tensors
// their configs imply, and the closed-form count from config.json alone
// equals the sum of the tensors' sizes.
func TestVerifyFixtures(t *testing.T) {
	for _, c := range []struct {
		dir     string
		tensors int
		params  int64
	}{
		// llama-tiny: embed 512·64 = 32768, untied lm_head 32768; per layer
		// q 64·64 = 4096, k and v 32·64 = 2048 each, o 4096, gate/up/down
		// 176·64 = 11264 each, two norms 128 → 46208; 2 layers 92416; final
		// norm 64. Total 158016 = the data section 632064 B / 4.
		// Tensors: 2 + 9·2 + 1 = 21.
		{"llama-tiny", 21, 158016},
		// gpt2-tiny: wte 512·64 = 32768, wpe 128·64 = 8192; per layer c_attn
		// 64·192 + 192 = 12480, attn c_proj 4096 + 64 = 4160, c_fc 64·256 + 256
		// = 16640, mlp c_proj 256·64 + 64 = 16448, ln_1 and ln_2 256 → 49984;
		// 2 layers 99968; ln_f 128. Total 141056 = 564224 B / 4.
		// Tensors: 2 + 12·2 + 2 = 28.
		{"gpt2-tiny", 28, 141056},
	} {
		cfg, n, err := Verify(fixture(c.dir))
		if err != nil {
			t.Fatal(err)
		}
		specs := ExpectedTensors(cfg)
		var sum int64
		for _, s := range specs {
			sum += s.Elements()
		}
		if len(specs) != c.tensors || n != c.params || cfg.ParamCount() != c.params || sum != c.params {
			t.Errorf("%s: %d tensors, checkpoint %d params, ParamCount %d, specs %d; want %d tensors, %d params",
				c.dir, len(specs), n, cfg.ParamCount(), sum, c.tensors, c.params)
		}
	}
}

// TestPublicParamCounts compares ParamCount of the seeds' models'
// config.json (testdata/configs) with their published parameter counts, as
// transformers' num_parameters() reports them (tied weights once).
func TestPublicParamCounts(t *testing.T) {
	for _, c := range []struct {
		name string
		want int64
	}{
		// 32·(4·4096² + 3·4096·11008 + 2·4096) + 2·32000·4096 + 4096
		{"llama-2-7b", 6_738_415_616},
		// 40·(4·5120² + 3·5120·13824 + 2·5120) + 2·32000·5120 + 5120
		{"llama-2-13b", 13_015_864_320},
		// 80·(8192·(8192 + 2·1024) + 8192² + 3·8192·28672 + 2·8192) + 2·32000·8192 + 8192
		{"llama-2-70b", 68_976_648_192},
		// wte 50257·1600 + wpe 1024·1600 + 48·(4·1600² + 2·1600·6400 + 13·1600 + 6400) + 2·1600
		{"gpt2-xl", 1_557_611_200},
		// wte 50257·2 + wpe 1024·2 + 2·74 + 4
		{"tiny-gpt2", 102_714},
	} {
		cfg, err := ReadConfig(filepath.Join("testdata", "configs", c.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, s := range ExpectedTensors(cfg) {
			sum += s.Elements()
		}
		if got := cfg.ParamCount(); got != c.want || sum != c.want {
			t.Errorf("%s: ParamCount %d, tensor specs %d, want %d", c.name, got, sum, c.want)
		}
	}
}

// shard writes llama-tiny's tensors into two shards and an index; mutate may
// change the tensors of shard 2 and the index before they are written.
func shard(t *testing.T, mutate func(s2 *[]rawTensorData, weightMap map[string]string)) string {
	t.Helper()
	dir := t.TempDir()
	all := copyTensors(t, fixture("llama-tiny/model.safetensors"))
	s1, s2 := all[:len(all)/2], append([]rawTensorData(nil), all[len(all)/2:]...)
	wm := map[string]string{}
	for _, x := range s1 {
		wm[x.name] = "model-00001-of-00002.safetensors"
	}
	for _, x := range s2 {
		wm[x.name] = "model-00002-of-00002.safetensors"
	}
	if mutate != nil {
		mutate(&s2, wm)
	}
	writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), s1)
	writeSafetensors(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), s2)
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 632064}, "weight_map": wm})
	if err := os.WriteFile(filepath.Join(dir, IndexFile), idx, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(fixture("llama-tiny/config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestShardedCheckpoint(t *testing.T) {
	dir := shard(t, nil)
	cfg, n, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != 158016 || cfg.ParamCount() != n {
		t.Fatalf("sharded: %d params, want 158016", n)
	}
	// A tensor read through the index equals the same tensor of the single file.
	w, err := OpenWeights(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(w.Files()) != 2 {
		t.Fatalf("%d files mapped, want 2", len(w.Files()))
	}
	single, err := Open(fixture("llama-tiny/model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	for _, name := range []string{"lm_head.weight", "model.norm.weight"} {
		a, _ := w.Tensor(name)
		b, _ := single.Tensor(name)
		x, _ := a.Float32()
		y, _ := b.Float32()
		if !slices.Equal(x, y) || len(x) == 0 {
			t.Errorf("%s differs between the shards and the single file", name)
		}
	}
}

func TestCheckpointErrors(t *testing.T) {
	setShape := func(name string, shape ...int64) func(*[]rawTensorData, map[string]string) {
		return func(s2 *[]rawTensorData, _ map[string]string) {
			for i := range *s2 {
				if (*s2)[i].name == name {
					(*s2)[i].shape = shape
				}
			}
		}
	}
	for _, c := range []struct {
		name   string
		mutate func(*[]rawTensorData, map[string]string)
		want   []string
	}{
		{"missing tensor", func(s2 *[]rawTensorData, wm map[string]string) {
			// Shard 2 starts at the 11th name in sorted order: layer 0's v_proj.
			*s2 = (*s2)[1:] // drop it from the file and the index
			delete(wm, "model.layers.0.self_attn.v_proj.weight")
		}, []string{`tensor "model.layers.0.self_attn.v_proj.weight" is missing`}},
		// model.norm.weight is 64 floats; stored as [8, 8] its bytes still fit.
		{"wrong shape", setShape("model.norm.weight", 8, 8), []string{"model-00002-of-00002.safetensors", `"model.norm.weight"`, "shape [8 8], the config needs [64]"}},
		{"wrong dtype", func(s2 *[]rawTensorData, _ map[string]string) {
			for i := range *s2 {
				if (*s2)[i].name == "model.norm.weight" {
					(*s2)[i].dtype = "I32"
				}
			}
		}, []string{"model-00002-of-00002.safetensors", `"model.norm.weight"`, "I32"}},
		{"index points elsewhere", func(_ *[]rawTensorData, wm map[string]string) {
			wm["model.norm.weight"] = "model-00001-of-00002.safetensors"
		}, []string{`"model.norm.weight" is mapped to`, "model-00001-of-00002.safetensors"}},
		{"unindexed tensor", func(_ *[]rawTensorData, wm map[string]string) {
			delete(wm, "model.norm.weight")
		}, []string{`"model.norm.weight" is in`, "not mapped"}},
		{"path in index", func(_ *[]rawTensorData, wm map[string]string) {
			wm["model.norm.weight"] = "../model-00002-of-00002.safetensors"
		}, []string{`weight_map["model.norm.weight"]`, "must be a file name"}},
		{"unexpected tensor", func(s2 *[]rawTensorData, wm map[string]string) {
			*s2 = append(*s2, rawTensorData{"model.extra.weight", F32, []int64{1}, f32s(1)})
			wm["model.extra.weight"] = "model-00002-of-00002.safetensors"
		}, []string{`unexpected tensor "model.extra.weight"`}},
	} {
		_, _, err := Verify(shard(t, c.mutate))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
}

// TestGPT2Aliases: GPT-2 checkpoints saved from GPT2Model lack the
// "transformer." prefix and carry causal-mask buffers; both are accepted.
func TestGPT2Aliases(t *testing.T) {
	dir := t.TempDir()
	var ts []rawTensorData
	for _, x := range copyTensors(t, fixture("gpt2-tiny/model.safetensors")) {
		x.name = strings.TrimPrefix(x.name, "transformer.")
		ts = append(ts, x)
	}
	ts = append(ts, rawTensorData{"h.0.attn.bias", "BOOL", []int64{1, 1, 2, 2}, []byte{1, 0, 1, 1}})
	writeSafetensors(t, filepath.Join(dir, SingleFile), ts)
	cfg, _ := os.ReadFile(fixture("gpt2-tiny/config.json"))
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, n, err := Verify(dir); err != nil || n != 141056 {
		t.Errorf("prefix-less GPT-2: %d params, %v; want 141056", n, err)
	}
}

func TestNoWeights(t *testing.T) {
	_, err := OpenWeights(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "neither model.safetensors nor model.safetensors.index.json") {
		t.Errorf("empty dir: %v", err)
	}
}
