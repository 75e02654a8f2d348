package configs

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/topology"
)

// Files holds every embedded preset: strategies at the top level, and the
// model, hardware and topology presets they name.
//
//go:embed *.toml model/*.toml hardware/*.toml topology/*.toml runtime/*.toml test/*.toml claims/*.toml
var Files embed.FS

// DefaultStrategies are the presets `partbench model --dry-run` compares when
// no file is given: the seed experiment's two layouts.
var DefaultStrategies = []string{"tp8pp2", "layerwise16"}

// Presets lists the embedded preset names of a kind: "" for strategies,
// or "model", "hardware", "topology", "runtime", "test".
func Presets(kind string) []string {
	dir := "."
	if kind != "" {
		dir = kind
	}
	ents, _ := fs.ReadDir(Files, dir)
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".toml") {
			out = append(out, strings.TrimSuffix(e.Name(), ".toml"))
		}
	}
	sort.Strings(out)
	return out
}

// Load reads a strategy config from a file path or, when no such file exists
// and the name has no directory part, from the embedded preset of that name
// (with or without ".toml"). "test/<name>" names an embedded test config.
//
// "-" reads standard input. A file is read only when it is a regular file
// of at most MaxConfigBytes (see ReadFile).
func Load(name string) (*Config, error) {
	if name == "-" {
		data, err := readBounded(os.Stdin, "standard input", "config")
		if err != nil {
			return nil, err
		}
		return Parse(bytes.NewReader(data), "standard input")
	}
	if data, err := ReadFile(name); err == nil {
		return Parse(bytes.NewReader(data), name)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	preset := strings.TrimSuffix(strings.TrimPrefix(name, "configs/"), ".toml")
	data, err := fs.ReadFile(Files, preset+".toml")
	if err != nil {
		return nil, fmt.Errorf("config %q: no such file, and no embedded preset of that name (presets: %s; test configs: test/%s)",
			name, strings.Join(Presets(""), ", "), strings.Join(Presets("test"), ", test/"))
	}
	return Parse(bytes.NewReader(data), "preset:"+preset)
}

// Parse decodes a config strictly, resolves the presets it names (a section's
// own keys override its preset's), fills defaults, and validates it. source
// names the input in error messages.
func Parse(r io.Reader, source string) (*Config, error) {
	data, err := readBounded(r, source, "config")
	if err != nil {
		return nil, err
	}
	// First pass: strict decode of the file alone, to learn which presets it names.
	var probe Config
	md, err := decodeStrict(data, &probe, source)
	if err != nil {
		return nil, err
	}
	var cfg Config
	for _, p := range []struct {
		kind, name string
		into       any
	}{
		{"model", probe.Model.Preset, &cfg.Model},
		{"hardware", probe.Hardware.Preset, &cfg.Hardware},
		{"topology", probe.Topology.Preset, &cfg.Topology},
		{"runtime", probe.Runtime.Preset, &cfg.Runtime},
	} {
		if p.name == "" {
			continue
		}
		if err := decodePreset(source, p.kind, p.name, p.into); err != nil {
			return nil, err
		}
	}
	// Second pass: the file's own keys on top of its presets.
	if _, err := decodeStrict(data, &cfg, source); err != nil {
		return nil, err
	}
	cfg.Source = source
	if err := cfg.resolveModelDir(md); err != nil {
		return nil, err
	}
	if !md.IsDefined("run") {
		cfg.Run = DefaultRun // a dry-run config needs no [run]
	}
	if err := cfg.finish(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// decodePreset decodes the embedded preset name of kind ("model",
// "hardware", "topology", "runtime") into into; source names the config
// that asked for it in errors.
func decodePreset(source, kind, name string, into any) error {
	pdata, err := fs.ReadFile(Files, path.Join(kind, name+".toml"))
	if err != nil {
		return fmt.Errorf("%s: %s.preset: unknown preset %q (available: %s)",
			source, kind, name, strings.Join(Presets(kind), ", "))
	}
	_, err = decodeStrict(pdata, into, kind+"/"+name+".toml")
	return err
}

// finish fills c's defaults, applies its runtime to the hardware and
// validates it; errors name c.Source. Every way to a Config ends here.
func (c *Config) finish() error {
	c.applyDefaults()
	if err := c.Runtime.Validate("runtime"); err != nil {
		return fmt.Errorf("%s: %w", c.Source, err)
	}
	c.Hardware.GPU = c.Runtime.Apply(c.Hardware.GPU)
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", c.Source, err)
	}
	return nil
}

// decodeStrict decodes data into into, refusing unknown keys and shapes
// beyond the bounds; the metadata says which keys the text defines.
func decodeStrict(data []byte, into any, source string) (toml.MetaData, error) {
	if err := CheckTOMLShape(data, source); err != nil {
		return toml.MetaData{}, err
	}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(into)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			// The text parses on its own where the error is a value's that
			// a field refused (an unknown dtype or algorithm name).
			var generic map[string]any
			if _, gerr := toml.NewDecoder(bytes.NewReader(data)).Decode(&generic); gerr == nil {
				return md, positionedError(data, source, "invalid value", perr)
			}
			return md, syntaxError(data, source, perr)
		}
		return md, fmt.Errorf("%s: %w", source, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return md, fmt.Errorf("%s: unknown key %s (check spelling; see docs/config.md)", source, UnknownKeys(und))
	}
	return md, nil
}

// DefaultRun is a config's [run] when the file has none: a short measured
// run (nccl-tests' own defaults are 5 warm-up and 20 measured iterations).
var DefaultRun = Run{Warmup: 2, Iterations: 10, Seed: 1}

func (c *Config) applyDefaults() {
	if c.Version == 0 {
		c.Version = SchemaVersion
	}
	if c.Model.KVHeads == 0 {
		c.Model.KVHeads = c.Model.Heads
	}
	if len(c.Workload.Phases) == 0 {
		c.Workload.Phases = []string{"prefill", "decode"}
	}
	if c.Parallel.Microbatches == 0 {
		c.Parallel.Microbatches = 1
	}
	if c.Parallel.DP == 0 {
		c.Parallel.DP = 1
	}
	if c.Parallel.Schedule == "" {
		c.Parallel.Schedule = "fill-drain"
	}
	if c.Name == "" {
		c.Name = strings.TrimSuffix(path.Base(strings.TrimPrefix(c.Source, "preset:")), ".toml")
	}
}

// Hash is a digest of the resolved config (what a run actually uses), so
// ranks can check they were started with the same one.
func (c *Config) Hash() string {
	b, _ := json.Marshal(struct {
		*Config
		Source string `json:"source,omitempty"`
	}{Config: c})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// LoadSystem resolves a hardware preset and a topology preset by name.
func LoadSystem(hardware, topo string) (topology.GPU, topology.Topology, error) {
	var h Hardware
	var t Topology
	for _, p := range []struct {
		kind, name string
		into       any
	}{{"hardware", hardware, &h}, {"topology", topo, &t}} {
		data, err := fs.ReadFile(Files, path.Join(p.kind, p.name+".toml"))
		if err != nil {
			return h.GPU, t.Topology, fmt.Errorf("unknown %s preset %q (available: %s)", p.kind, p.name, strings.Join(Presets(p.kind), ", "))
		}
		if _, err := decodeStrict(data, p.into, p.kind+"/"+p.name+".toml"); err != nil {
			return h.GPU, t.Topology, err
		}
	}
	if err := h.GPU.Validate("hardware"); err != nil {
		return h.GPU, t.Topology, err
	}
	return h.GPU, t.Topology, t.Topology.Validate("topology")
}
