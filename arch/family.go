package arch

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// HFName is a Hugging Face `architectures` entry and the model_type
// transformers writes beside it.
type HFName struct {
	Architecture string // e.g. "LlamaForCausalLM"
	ModelType    string // e.g. "llama"
}

// Family is one architecture as data: its fixed features, the names it is
// known by, how its config.json is read and how its checkpoint names and
// stores its tensors. Each family lives in its own file and registers
// itself (register); nothing else branches on its name.
type Family struct {
	// Name is the family's name in a config's model.arch ("llama", "gpt2").
	Name string
	// Default: the family of a config that names none (model.arch absent).
	Default bool
	// HF are the config.json architectures (and model_type) read as this
	// family.
	HF        []HFName
	Norm      Norm
	Positions Positions
	// MLP is the family's activation; 0 leaves it to the config's
	// gated_mlp (GatedSiLU when set, GELUTanh otherwise).
	MLP MLP
	// Bias: every linear has a bias.
	Bias bool
	// TiedAlways: the LM head is always the token embedding.
	TiedAlways bool
	// MultiHead: kv_heads = heads (no grouped-query attention).
	MultiHead bool
	// Layout is how the checkpoint stores the weights (model reads a
	// shard by it).
	Layout Layout

	// Names are the checkpoint's tensor names (the one place they are
	// spelled: the tensor list and a shard's reader both use them).
	Names TensorNames

	// parse reads the family's config.json fields into d.
	parse func(f *fields, d *Description)
	// buffers matches the tensors some transformers versions save that are
	// not parameters; they are ignored when present.
	buffers *regexp.Regexp
}

var (
	families []*Family
	byName   = map[string]*Family{}
	byHF     = map[string]*Family{}
)

// register adds f to the registry; called from each family's init. A
// duplicate name or Hugging Face architecture is a programming error.
func register(f *Family) {
	if _, dup := byName[f.Name]; dup || f.Name == "" {
		panic(fmt.Sprintf("arch: family %q registered twice or unnamed", f.Name))
	}
	if f.Layout == SeparateQKV && f.Bias {
		panic(fmt.Sprintf("arch: family %q: SeparateQKV with biases has no bias names (TensorNames)", f.Name))
	}
	if f.Default && defaultFamily() != nil {
		panic(fmt.Sprintf("arch: two default families (%q and %q)", defaultFamily().Name, f.Name))
	}
	for _, h := range f.HF {
		if _, dup := byHF[h.Architecture]; dup {
			panic(fmt.Sprintf("arch: architecture %q registered twice", h.Architecture))
		}
		byHF[h.Architecture] = f
	}
	byName[f.Name] = f
	families = append(families, f)
	sort.Slice(families, func(i, j int) bool { return families[i].Name < families[j].Name })
}

func defaultFamily() *Family {
	for _, f := range families {
		if f.Default {
			return f
		}
	}
	return nil
}

// Families is every registered family, by name.
func Families() []*Family { return append([]*Family(nil), families...) }

// Names is the registered families' names, sorted and quoted, for errors.
func Names() string {
	var s []string
	for _, f := range families {
		s = append(s, fmt.Sprintf("%q", f.Name))
	}
	return strings.Join(s, ", ")
}

// Lookup is the family a config's model.arch names ("" is the default
// family, Llama); an unknown name is an error naming it and the allowed ones.
func Lookup(name string) (*Family, error) {
	if name == "" {
		return defaultFamily(), nil
	}
	if f, ok := byName[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("model.arch: must be one of %s (got %q)", Names(), name)
}

// MustLookup is Lookup for a name already validated; an unknown name is
// the default family.
func MustLookup(name string) *Family {
	if f, err := Lookup(name); err == nil {
		return f
	}
	return defaultFamily()
}

// ByArchitecture is the family of a config.json architectures entry.
func ByArchitecture(arch string) (*Family, bool) {
	f, ok := byHF[arch]
	return f, ok
}

// HFArchitectures is every accepted config.json architecture, sorted.
func HFArchitectures() []string {
	var s []string
	for a := range byHF {
		s = append(s, a)
	}
	sort.Strings(s)
	return s
}

// modelType is the model_type transformers writes beside architecture a.
func (f *Family) modelType(a string) string {
	for _, h := range f.HF {
		if h.Architecture == a {
			return h.ModelType
		}
	}
	return ""
}

// IsBuffer reports whether a checkpoint tensor name is a known
// non-parameter buffer of the family (ignored when present).
func (f *Family) IsBuffer(name string) bool { return f.buffers != nil && f.buffers.MatchString(name) }

// String is the family's name.
func (f *Family) String() string { return f.Name }
