//go:build cgo

package cuda

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// hfPlan is `generate`'s plan of the model in dir: 2 sequences, a context
// of 16, tp × pp ranks.
func hfPlan(t testing.TB, dir string, tp, pp int) *partition.Plan {
	t.Helper()
	cfg, err := configs.GenerateConfig(dir, 2, 16, 4, tp, pp, 1)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func openModel(t *testing.T, dir string) *hf.Model {
	t.Helper()
	m, err := hf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// deviceBytes is the shard (layer, name) as it lies in device memory (the
// fake's device memory is host memory, read back by a copy).
func deviceBytes(t *testing.T, c *Compute, layer int, name string) []byte {
	t.Helper()
	w := c.frame.Weights[pexec.TensorKey{Layer: layer, Name: name}]
	if w == nil {
		t.Fatalf("rank %d holds no %s of layer %d", c.rank.Rank, name, layer)
	}
	out := make([]byte, w.k*w.n*c.dt.bytes)
	if err := c.downloadInto(out, w.p); err != nil {
		t.Fatal(err)
	}
	return out
}

// Each rank's device buffers hold exactly exec/cpu's shards of the same
// rank, read from the same checkpoint, encoded by the host converters
// (dtype.encode: f32ToF16, f32ToBF16, round to nearest even): both
// fixtures, TP 1 and 2 (and tp2 × pp2, whose stages hold different
// layers), fp32, fp16 and bf16. A shard from the wrong TP index, a
// transposed or un-permuted Llama q/k, or a conversion that rounds
// differently changes bytes.
func TestCheckpointSlicesOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		dir := checkpointtest.Dir(t, fx)
		m := openModel(t, dir)
		for _, p := range [][2]int{{1, 1}, {2, 1}, {2, 2}} {
			plan := hfPlan(t, dir, p[0], p[1])
			for rank := range plan.Ranks {
				ref, err := cpu.NewWith(plan, rank, cpu.Options{Weights: m.Shards})
				if err != nil {
					t.Fatal(err)
				}
				for _, dt := range []string{"fp32", "fp16", "bf16"} {
					before := fakeCounters(t)
					c := fakeCompute(t, plan, rank, Options{DType: dt, Weights: m.Shards})
					after := fakeCounters(t)
					// One staging buffer, freed before New returns.
					if a, f := after["hostAllocs"]-before["hostAllocs"], after["hostFrees"]-before["hostFrees"]; a != 1 || f != 1 {
						t.Errorf("%s tp%dpp%d rank %d %s: %d pinned allocations and %d frees, want 1 and 1", fx, p[0], p[1], rank, dt, a, f)
					}
					if fx == "llama-tiny" && dt == "fp16" && p[1] == 1 {
						// The largest shard is the embedding [512/tp, 64] (and
						// the LM head [64, 512/tp]): 32768/tp elements of 2 B;
						// w_up, [64, 2·176/tp], is smaller.
						want := fmt.Sprintf("pinned buffer of %d B", 65536/p[0])
						if !strings.Contains(c.WeightSource(), want) {
							t.Errorf("tp%d: weight source %q, want %q", p[0], c.WeightSource(), want)
						}
					}
					tensors := plan.Tensors(rank)
					if len(tensors) == 0 {
						t.Fatalf("%s tp%dpp%d rank %d holds no tensors", fx, p[0], p[1], rank)
					}
					for _, ts := range tensors {
						want := dtypes[dt].encode(ref.Weight(ts.Layer, ts.Name))
						if got := deviceBytes(t, c, ts.Layer, ts.Name); !bytes.Equal(got, want) {
							t.Fatalf("%s tp%dpp%d rank %d %s: %s of layer %d differs from exec/cpu's shard (%d bytes, want %d)",
								fx, p[0], p[1], rank, dt, ts.Name, ts.Layer, len(got), len(want))
						}
					}
					c.Close()
				}
				ref.Close()
			}
		}
	}
}

// fakeCounters are the fake driver's counters (launches, hostAllocs,
// hostFrees, …).
func fakeCounters(t *testing.T) map[string]int {
	t.Helper()
	d, err := loadDriver()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cudatest.Counters(d.ErrorName(cuda.Result(cudatest.Trace)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// stTensor is one tensor of a safetensors file the tests write.
type stTensor struct {
	name  string
	dtype checkpoint.DType
	shape []int64
	data  []byte
}

// writeSafetensors writes tensors as dir/model.safetensors: the 8-byte
// little-endian header length, the JSON header, the data in order.
func writeSafetensors(t testing.TB, dir string, tensors []stTensor) {
	t.Helper()
	header := map[string]any{}
	var data []byte
	for _, x := range tensors {
		header[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{len(data), len(data) + len(x.data)}}
		data = append(data, x.data...)
	}
	js, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	binary.Write(&out, binary.LittleEndian, uint64(len(js)))
	out.Write(js)
	out.Write(data)
	if err := os.WriteFile(filepath.Join(dir, checkpoint.SingleFile), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// convertFixture writes fixture fx (F32) to a new directory with every
// tensor in dtype (F32, F16 or BF16, rounded by the host converters), after
// edit changes the list (nil: none); config.json is copied.
func convertFixture(t *testing.T, fx string, dtype checkpoint.DType, edit func([]stTensor) []stTensor) string {
	t.Helper()
	src := checkpointtest.Dir(t, fx)
	w, err := checkpoint.OpenWeights(src)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var tensors []stTensor
	for _, name := range w.Names() {
		x, _ := w.Tensor(name)
		v, err := x.Float32()
		if err != nil {
			t.Fatal(err)
		}
		var b []byte
		switch dtype {
		case checkpoint.F32:
			b = dtypes["fp32"].encode(v)
		case checkpoint.F16:
			b = dtypes["fp16"].encode(v)
		case checkpoint.BF16:
			b = dtypes["bf16"].encode(v)
		default:
			t.Fatalf("dtype %s", dtype)
		}
		tensors = append(tensors, stTensor{name, dtype, x.Info.Shape, b})
	}
	if edit != nil {
		tensors = edit(tensors)
	}
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(src, checkpoint.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkpoint.ConfigFile), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	writeSafetensors(t, dir, tensors)
	return dir
}

// Checkpoints stored in F16 and BF16 reach the device in every run dtype:
// in the checkpoint's own type the bytes are the file's, unchanged (a norm
// vector, which is neither permuted nor transposed, compared with the raw
// bytes of its tensor); in another type each element is the host
// converters' rounding of the exactly widened value (checkpoint.F16ToFloat32,
// BF16ToFloat32, then f32ToF16 or f32ToBF16) — for every shard, against
// exec/cpu's float32 shard of the same file.
func TestCheckpointDTypesOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	const norm = "model.layers.1.post_attention_layernorm.weight"
	for _, st := range []checkpoint.DType{checkpoint.F16, checkpoint.BF16} {
		dir := convertFixture(t, "llama-tiny", st, nil)
		m := openModel(t, dir)
		raw, ok := m.Weights.Tensor(norm)
		if !ok || raw.Info.DType != st {
			t.Fatalf("%s: %s not written as %s", dir, norm, st)
		}
		widen := checkpoint.F16ToFloat32
		if st == checkpoint.BF16 {
			widen = checkpoint.BF16ToFloat32
		}
		plan := hfPlan(t, dir, 2, 1)
		for rank := range plan.Ranks {
			ref, err := cpu.NewWith(plan, rank, cpu.Options{Weights: m.Shards})
			if err != nil {
				t.Fatal(err)
			}
			for _, dt := range []string{"fp32", "fp16", "bf16"} {
				c := fakeCompute(t, plan, rank, Options{DType: dt, Weights: m.Shards})
				got := deviceBytes(t, c, 1, model.MLPNorm)
				same := dt == "fp16" && st == checkpoint.F16 || dt == "bf16" && st == checkpoint.BF16
				if same && !bytes.Equal(got, raw.Bytes()) {
					t.Errorf("%s checkpoint, %s run: %s on the device differs from the file's bytes", st, dt, norm)
				}
				// Element by element from the file's bits.
				for i := 0; i < len(raw.Bytes())/2; i++ {
					f := widen(binary.LittleEndian.Uint16(raw.Bytes()[2*i:]))
					want := dtypes[dt].encode([]float32{f})
					if !bytes.Equal(got[i*len(want):(i+1)*len(want)], want) {
						t.Fatalf("%s checkpoint, %s run: element %d of %s is % x, want % x (from %v)", st, dt, i, norm, got[i*len(want):(i+1)*len(want)], want, f)
					}
				}
				for _, ts := range plan.Tensors(rank) {
					if !bytes.Equal(deviceBytes(t, c, ts.Layer, ts.Name), dtypes[dt].encode(ref.Weight(ts.Layer, ts.Name))) {
						t.Fatalf("%s checkpoint, %s run, rank %d: %s of layer %d differs from exec/cpu's shard", st, dt, rank, ts.Name, ts.Layer)
					}
				}
				c.Close()
			}
			ref.Close()
		}
	}
}

// A checkpoint that does not hold what config.json describes is refused
// when the rank that needs the tensor reads it, naming the file or
// directory, the tensor, and the shape or dtype found against what is
// needed; the rank that does not hold the tensor (pp 2: stage 0 has layer
// 0 only) is not refused.
func TestCheckpointRefusalsOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	const up = "model.layers.1.mlp.up_proj.weight" // [176, 64]
	for _, tc := range []struct {
		name string
		edit func([]stTensor) []stTensor
		want []string
	}{
		{"missing", func(ts []stTensor) []stTensor {
			out := ts[:0]
			for _, x := range ts {
				if x.name != up {
					out = append(out, x)
				}
			}
			return out
		}, []string{`tensor "` + up + `" is missing from the checkpoint`, "layer 1 w_up"}},
		{"shape", func(ts []stTensor) []stTensor {
			for i := range ts {
				if ts[i].name == up {
					ts[i].shape, ts[i].data = []int64{88, 64}, ts[i].data[:len(ts[i].data)/2]
				}
			}
			return ts
		}, []string{checkpoint.SingleFile, `tensor "` + up + `"`, "shape [88 64], the config needs [176 64]"}},
		{"dtype", func(ts []stTensor) []stTensor {
			for i := range ts {
				if ts[i].name == up {
					ts[i].dtype = "I32"
				}
			}
			return ts
		}, []string{checkpoint.SingleFile, `tensor "` + up + `"`, "dtype I32 cannot be read as float32 (allowed: F32, F16, BF16)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := convertFixture(t, "llama-tiny", checkpoint.F32, tc.edit)
			m := openModel(t, dir)
			plan := hfPlan(t, dir, 1, 2)
			if c, err := New(plan, 0, Options{DType: "fp16", Weights: m.Shards}); err != nil {
				t.Errorf("stage 0 (layer 0) refused: %v", err)
			} else {
				c.Close()
			}
			_, err := New(plan, 1, Options{DType: "fp16", Weights: m.Shards})
			if err == nil {
				t.Fatal("stage 1 accepted")
			}
			msg := err.Error()
			for _, want := range append(tc.want, "cuda: rank 1", dir) {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
		})
	}
}

// With Options.Inputs the prefill reads the prompts' ids (uploaded once),
// and every sample writes the next pass's ids into the tokens buffer: the
// prompt's id while the position is inside it, then the argmax read back
// from the device (pb_argmax's output, written here by hand since the
// fake kernels compute nothing).
func TestCheckpointInputsOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	dir := checkpointtest.Dir(t, "gpt2-tiny")
	m := openModel(t, dir)
	plan := hfPlan(t, dir, 1, 1) // prompt 12 positions, 4 new tokens
	prompts := [][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}}
	in := &model.Inputs{Prompts: prompts, Greedy: true}
	if _, err := New(plan, 0, Options{Weights: m.Shards, Inputs: in, Graphs: true}); err == nil || !strings.Contains(err.Error(), "Graphs") {
		t.Errorf("Inputs with graphs: %v", err)
	}
	c := fakeCompute(t, plan, 0, Options{Weights: m.Shards, Inputs: in})
	P := c.frame.Prompt
	if P != 12 || !c.promptSet {
		t.Fatalf("prompt %d positions (set %v), want 12", P, c.promptSet)
	}
	got := make([]byte, 4*2*P)
	if err := c.downloadInto(got, c.promptDev); err != nil {
		t.Fatal(err)
	}
	var flat []float32
	for _, p := range prompts {
		for _, id := range p {
			flat = append(flat, float32(id))
		}
	}
	if !bytes.Equal(got, idBytes(flat)) {
		t.Errorf("prompt on the device %v, want %v", dtypes["fp32"].decode(got), flat)
	}
	st := c.mbs[0]
	tokens, err := c.frame.Buffer(model.Tokens, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	unpin, err := c.pin()
	if err != nil {
		t.Fatal(err)
	}
	defer unpin()
	sampled := []byte{0x2a, 0, 0, 0, 0xff, 0x01, 0, 0} // argmax 42 and 511
	if err := c.stream.CopyHtoDAsync(st.sampled, sampled); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pos  int
		want []float32
	}{
		// Position 11 is the prompt's last: its ids; 12 and after: the argmax.
		{11, []float32{12, 32}},
		{12, []float32{42, 511}},
		{15, []float32{42, 511}},
	} {
		if err := c.feedInputs(st, tokens, 2, 0, tc.pos, 512); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 8)
		if err := c.downloadInto(out, tokens.p); err != nil {
			t.Fatal(err)
		}
		if v := dtypes["fp32"].decode(out); fmt.Sprint(v) != fmt.Sprint(tc.want) {
			t.Errorf("position %d: tokens %v, want %v", tc.pos, v, tc.want)
		}
	}
}

// BenchmarkCheckpointLoadOnFakes loads a synthetic Llama checkpoint in F16
// (hidden 1024, 16 heads of 64, 8 KV heads, FFN 2816, 2 layers, vocabulary
// 8192: 40.4M parameters, 80.8 MB) into one fp16 rank on the fake driver,
// whose device memory is host memory: it measures the host side of a load
// (each shard read from the mapping, laid out, converted, staged and
// copied), in bytes of weights on the device per second, and the most
// float32 bytes of the checkpoint the load held at once (host-f32-peak-MB:
// the whole rank, 161.5 MB, in one window of the default 1 GiB). The
// checkpoint is written once, outside the timing.
func BenchmarkCheckpointLoadOnFakes(b *testing.B) {
	cudatest.Build(b).Setenv(b)
	dir := b.TempDir()
	cfgJSON := `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816,
"num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 64, "num_hidden_layers": 2, "vocab_size": 8192,
"max_position_embeddings": 256, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu"}`
	if err := os.WriteFile(filepath.Join(dir, checkpoint.ConfigFile), []byte(cfgJSON), 0o644); err != nil {
		b.Fatal(err)
	}
	hfc, err := checkpoint.ReadConfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	var tensors []stTensor
	x := uint32(1)
	for _, sp := range checkpoint.ExpectedTensors(hfc) {
		data := make([]byte, 2*sp.Elements())
		for i := 0; i < len(data); i += 2 {
			x = x*1664525 + 1013904223
			h := f32ToF16(float32(int32(x>>8)-1<<23) / (1 << 28)) // uniform in [−1/32, 1/32)
			data[i], data[i+1] = byte(h), byte(h>>8)
		}
		tensors = append(tensors, stTensor{sp.Name, checkpoint.F16, sp.Shape, data})
	}
	writeSafetensors(b, dir, tensors)
	m, err := hf.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	plan := hfPlan(b, dir, 1, 1)
	var weights, peak int64
	b.ResetTimer()
	for range b.N {
		c, err := New(plan, 0, Options{DType: "fp16", Weights: m.Shards})
		if err != nil {
			b.Fatal(err)
		}
		weights, peak = c.AllocatedByKind()[pexec.AllocWeights], c.hostPeakBytes
		c.Close()
	}
	b.SetBytes(weights)
	b.ReportMetric(float64(peak)/1e6, "host-f32-peak-MB")
}
