package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/partbench/partbench/fileio"
)

// ConfigFile is the name of a Hugging Face model directory's config.
const ConfigFile = "config.json"

// MaxConfigJSONBytes bounds a model directory's config.json: Hugging Face
// configs are a few KiB (Llama-3-70B's is under 1 KiB).
const MaxConfigJSONBytes = 1 << 20

// Description is a Hugging Face config.json in partbench's own terms: the
// family, the shape and the options that change the model's function. It
// is read once per run (ReadConfig) and handed on: configs builds the
// model from it, checkpoint checks and model reads the weights by it.
type Description struct {
	Source       string // the file it was read from
	Architecture string // e.g. "LlamaForCausalLM"
	Family       *Family
	Layers       int
	Hidden       int
	Heads        int
	KVHeads      int
	HeadDim      int
	FFN          int
	Vocab        int
	MaxPositions int
	NormEps      float64
	Norm         Norm
	RopeTheta    float64 // 0 when positions are learned (GPT-2)
	// LearnedPositions: a [max_positions, hidden] position embedding (GPT-2).
	LearnedPositions  bool
	TieWordEmbeddings bool
	Activation        string // as config.json spells it: "silu", "gelu_new"
	GatedMLP          bool   // gate and up projections (Llama) or one up (GPT-2)
	Bias              bool   // every linear has a bias (GPT-2)
	TorchDType        string // "dtype"/"torch_dtype", informational; "" when absent
	// DType is TorchDType when it names fp32, fp16 or bf16; 0 otherwise.
	DType DType
}

// ReadConfig reads config.json from a model directory (or the file itself).
func ReadConfig(path string) (*Description, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, ConfigFile)
	}
	data, err := fileio.ReadSmall(path, ConfigFile, MaxConfigJSONBytes)
	if err != nil {
		return nil, err
	}
	return ParseConfig(data, path)
}

// ParseConfig reads a config.json's bytes; src names it in errors. Unknown
// architectures and options that change the model's function beyond what
// partbench computes are refused, naming the field, its value and what is
// allowed. Fields that do not change the function (dropout, token ids,
// initialiser ranges) are ignored.
func ParseConfig(data []byte, src string) (*Description, error) {
	f := &fields{src: src}
	if err := json.Unmarshal(data, &f.m); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", src, err)
	}
	var archs []string
	if !f.decode("architectures", &archs, "a list of strings") && f.err == nil {
		f.fail("architectures is missing (allowed: %s)", supportedArchitectures())
	}
	if f.err != nil {
		return nil, f.err
	}
	if len(archs) != 1 {
		return nil, fmt.Errorf("%s: architectures = %q: exactly one is allowed, one of %s", src, archs, supportedArchitectures())
	}
	fam, ok := ByArchitecture(archs[0])
	if !ok {
		return nil, fmt.Errorf("%s: architectures = [%q] is not supported (allowed: %s)", src, archs[0], supportedArchitectures())
	}
	want := fam.modelType(archs[0])
	if mt := f.str("model_type", want); mt != want {
		f.fail("model_type = %q does not match architectures %q (want %q)", mt, archs[0], want)
	}
	if f.has("quantization_config") {
		f.fail("quantization_config is set: quantized checkpoints are not supported (allowed: absent)")
	}
	d := &Description{Source: src, Architecture: archs[0], Family: fam,
		Norm: fam.Norm, Bias: fam.Bias, LearnedPositions: fam.Positions == Learned}
	d.TorchDType = f.str("dtype", f.str("torch_dtype", ""))
	d.DType = TorchDType(d.TorchDType)
	fam.parse(f, d)
	if f.err != nil {
		return nil, f.err
	}
	return d, nil
}

func supportedArchitectures() string { return strings.Join(HFArchitectures(), ", ") }

// Features is the description's architecture features; bidirectional runs
// it as an encoder.
func (d *Description) Features(bidirectional bool) Features {
	o := Options{GatedMLP: d.GatedMLP, NormEps: d.NormEps, RopeTheta: d.RopeTheta, TiedEmbeddings: d.TieWordEmbeddings,
		Bidirectional: bidirectional}
	if d.LearnedPositions {
		o.MaxPositions = d.MaxPositions
	}
	return d.Family.Features(o)
}

// fields is a config.json object with typed, presence-aware accessors; the
// first error sticks and names the field.
type fields struct {
	src string
	m   map[string]json.RawMessage
	err error
}

func (f *fields) fail(format string, a ...any) {
	if f.err == nil {
		f.err = fmt.Errorf("%s: %s", f.src, fmt.Sprintf(format, a...))
	}
}

// has reports whether key is present and not null.
func (f *fields) has(key string) bool {
	v, ok := f.m[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

func (f *fields) decode(key string, into any, want string) bool {
	if !f.has(key) {
		return false
	}
	if err := json.Unmarshal(f.m[key], into); err != nil {
		f.fail("%s = %s: must be %s", key, f.m[key], want)
		return false
	}
	return true
}

// posInt reads a required positive integer; def > 0 is used when absent.
func (f *fields) posInt(key string, def int) int {
	var v int
	if !f.decode(key, &v, "an integer") {
		if f.err == nil && def <= 0 {
			f.fail("%s is missing (a positive integer is required)", key)
		}
		return def
	}
	if v <= 0 {
		f.fail("%s = %d: must be a positive integer", key, v)
	}
	return v
}

func (f *fields) float(key string, def float64) float64 {
	v := def
	f.decode(key, &v, "a number")
	return v
}

// posFloat is float that must be a positive finite number (a norm's ε:
// 0 divides by zero in an all-zero row).
func (f *fields) posFloat(key string, def float64) float64 {
	v := f.float(key, def)
	if !(v > 0) || math.IsInf(v, 0) {
		f.fail("%s = %v: must be a positive finite number", key, v)
	}
	return v
}

func (f *fields) boolean(key string, def bool) bool {
	v := def
	f.decode(key, &v, "true or false")
	return v
}

func (f *fields) str(key, def string) string {
	v := def
	f.decode(key, &v, "a string")
	return v
}

// wantBool refuses a present field whose value differs from the allowed one.
func (f *fields) wantBool(key string, allowed bool, why string) {
	if f.has(key) && f.boolean(key, allowed) != allowed {
		f.fail("%s = %v is not supported (allowed: %v; %s)", key, !allowed, allowed, why)
	}
}
