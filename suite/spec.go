package suite

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/fileio"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// Specs holds the embedded specs (quick, seed-001, seed-003).
//
//go:embed specs/*.toml
var Specs embed.FS

// SpecVersion is the spec schema this build reads.
const SpecVersion = 1

// MaxSpecBytes bounds a spec file.
const MaxSpecBytes = 1 << 20

// MaxSpecJSONBytes bounds the spec.json a suite directory holds: the spec
// partbench itself wrote, as indented JSON (a few times its TOML's size).
const MaxSpecJSONBytes = 8 * MaxSpecBytes

// Spec is one evaluation: every baseline runs every workload, Warmup
// unrecorded-in-statistics runs then Runs measured ones.
type Spec struct {
	Version     int    `toml:"version" json:"version"`
	Name        string `toml:"name" json:"name"`
	Description string `toml:"description" json:"description,omitempty"`
	Warmup      int    `toml:"warmup" json:"warmup"`
	Runs        int    `toml:"runs" json:"runs"`
	// Metrics lists what the report shows (all are always logged).
	Metrics []string `toml:"metrics" json:"metrics"`
	// Hardware is the GPU preset the model prices cells on; Link the
	// client↔server link it prices payload over.
	Hardware string `toml:"hardware" json:"hardware"`
	Link     string `toml:"link" json:"link"`
	// Backend is the spawned server's device backend (cpu or cuda).
	Backend   string     `toml:"backend" json:"backend"`
	Baselines []Baseline `toml:"baseline" json:"baselines"`
	Workloads []Workload `toml:"workload" json:"workloads"`
	Source    string     `toml:"-" json:"source"`
}

// Baseline is one way to execute a workload.
type Baseline struct {
	Name string `toml:"name" json:"name"`
	// Seed is the name the seed document gives it (seed 003's
	// local_pytorch, naive_disaggregation, ...), for the report.
	Seed string `toml:"seed" json:"seed,omitempty"`
	// Mode is a remote mode: local (in this process), naive, kv, stateful.
	Mode string `toml:"mode" json:"mode"`
	// Server is where the remote modes' server runs: "spawn" (a child
	// 'partbench serve' on loopback: a process boundary and a network round
	// trip) or "in-process" (a server in the suite's own process on
	// loopback). Empty for local.
	Server string `toml:"server" json:"server,omitempty"`
	// Transport is grpc or tcp (the raw-TCP twin: no RPC framework).
	Transport string `toml:"transport" json:"transport,omitempty"`
	// Kind is empty for a remote mode (Mode) or "partitioned": the workload
	// split over TP × PP in-process ranks (goroutines over exec/localcomm on
	// the CPU backend), with Microbatches pipeline micro-batches. Mode,
	// Server and Transport are then empty.
	Kind         string `toml:"kind,omitempty" json:"kind,omitempty"`
	TP           int    `toml:"tp,omitzero" json:"tp,omitempty"`
	PP           int    `toml:"pp,omitzero" json:"pp,omitempty"`
	Microbatches int    `toml:"microbatches,omitzero" json:"microbatches,omitempty"`
}

// KindPartitioned is the baseline kind of a local TP/PP partitioning.
const KindPartitioned = "partitioned"

// Partitioned reports whether b runs a local partitioning.
func (b Baseline) Partitioned() bool { return b.Kind == KindPartitioned }

// RecordMode is b's mode in records and results: the remote mode, or
// "partitioned".
func (b Baseline) RecordMode() string {
	if b.Partitioned() {
		return KindPartitioned
	}
	return b.Mode
}

// Workload is one model and phase.
type Workload struct {
	Name string `toml:"name" json:"name"`
	Seed string `toml:"seed" json:"seed,omitempty"`
	// Kind: llm-decode, llm-prefill, encoder, smoke, microbench.
	Kind string `toml:"kind" json:"kind"`
	// Model is a model preset (configs/model), or From (key config) a single-rank
	// config (file or preset) whose model is used; Layers > 0 overrides the
	// depth and Arch the architecture ("llama": the shape in Llama style).
	Model  string `toml:"model" json:"model,omitempty"`
	From   string `toml:"config" json:"config,omitempty"`
	Arch   string `toml:"arch" json:"arch,omitempty"`
	Layers int    `toml:"layers" json:"layers,omitempty"`
	// DType overrides the preset's (the remote engine's state I/O is fp32).
	DType        string `toml:"dtype" json:"dtype,omitempty"`
	Batch        int    `toml:"batch" json:"batch"`
	Context      int    `toml:"context" json:"context"`
	OutputTokens int    `toml:"output_tokens" json:"output_tokens"`
	// ModelOnlyCPU marks a workload the CPU backend cannot run in a
	// suite's time (Llama-2-7B in fp32 on a few cores takes minutes per
	// forward): with backend = "cpu" its cells are priced by the model
	// (modeled.json) and not run; with backend = "cuda" they run.
	ModelOnlyCPU bool `toml:"model_only_cpu,omitempty" json:"model_only_cpu,omitempty"`
}

// ModelOnly reports whether w's cells are modeled, not run, on s's backend.
func (s *Spec) ModelOnly(w Workload) bool {
	return w.ModelOnlyCPU && s.Backend == configs.BackendCPU
}

// RunCells is the matrix less the model-only cells, in run order.
func (s *Spec) RunCells() []Cell {
	var out []Cell
	for _, c := range s.Cells() {
		if !s.ModelOnly(c.Workload) {
			out = append(out, c)
		}
	}
	return out
}

// Workload kinds and what each cell's headline latency is.
const (
	KindDecode     = "llm-decode"  // mean time per decode step (s/token)
	KindPrefill    = "llm-prefill" // the prefill request
	KindEncoder    = "encoder"     // one bidirectional forward (the prefill request)
	KindSmoke      = "smoke"       // the whole generation
	KindMicrobench = "microbench"  // one transformer block's ops, one forward
)

var kinds = []string{KindDecode, KindPrefill, KindEncoder, KindSmoke, KindMicrobench}

// refusedKinds are seed 003 workloads that are not transformer Programs.
var refusedKinds = map[string]string{
	"vision-cnn":     "ResNet-50 is a convolutional network",
	"resnet-50":      "ResNet-50 is a convolutional network",
	"multimodal-vqa": "multimodal VQA needs a vision encoder (convolutions or patch embeddings) and cross-modal fusion",
}

// refusedBaselines are seed 003 baselines partbench has no executor for.
var refusedBaselines = map[string]string{
	"pytorch_rpc":  "PyTorch RPC",
	"ray_baseline": "Ray",
	"ray":          "Ray",
}

// Metric names a spec may list.
var Metrics = []string{"latency", "net_bytes", "gpu_util", "wire_bytes", "modeled"}

const (
	ServerSpawn     = "spawn"
	ServerInProcess = "in-process"
)

// Hash identifies the spec's matrix in the run log: a resumed suite must
// run the same spec.
func (s *Spec) Hash() string {
	var b bytes.Buffer
	_ = toml.NewEncoder(&b).Encode(s)
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:8])
}

// EmbeddedSpecs lists the embedded spec names.
func EmbeddedSpecs() []string {
	ents, _ := fs.ReadDir(Specs, "specs")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".toml"))
	}
	sort.Strings(out)
	return out
}

// Load reads a spec file, or an embedded spec by name.
func Load(name string) (*Spec, error) {
	// Checked before it is opened: opening a named pipe waits for a writer.
	data, err := fileio.ReadSmall(name, "spec", MaxSpecBytes)
	if err == nil {
		return Parse(bytes.NewReader(data), name)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("spec %s: %w", name, err)
	}
	data, err2 := fs.ReadFile(Specs, "specs/"+strings.TrimSuffix(name, ".toml")+".toml")
	if err2 != nil {
		return nil, fmt.Errorf("spec %q: no such file, and no embedded spec of that name (embedded: %s)", name, strings.Join(EmbeddedSpecs(), ", "))
	}
	return Parse(bytes.NewReader(data), "embedded:"+name)
}

// Parse decodes a spec strictly (unknown keys are errors with their path),
// fills defaults and validates every value.
func Parse(r io.Reader, source string) (*Spec, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("spec %s: %w", source, err)
	}
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("spec %s: larger than %d bytes", source, MaxSpecBytes)
	}
	if err := configs.CheckTOMLShape(data, "spec "+source); err != nil {
		return nil, err
	}
	var s Spec
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&s)
	if err != nil {
		return nil, fmt.Errorf("spec %s: %w", source, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("spec %s: unknown key %s (see docs/suite.md)", source, configs.UnknownKeys(und))
	}
	s.Source = source
	s.defaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("spec %s: %w", source, err)
	}
	return &s, nil
}

func (s *Spec) defaults() {
	if s.Hardware == "" {
		s.Hardware = "h100-sxm"
	}
	if s.Link == "" {
		s.Link = "loopback"
	}
	if s.Backend == "" {
		s.Backend = configs.BackendCPU
	}
	if len(s.Metrics) == 0 {
		s.Metrics = []string{"latency", "net_bytes", "gpu_util", "modeled"}
	}
	for i := range s.Baselines {
		b := &s.Baselines[i]
		if b.Kind != "" {
			if b.Kind == KindPartitioned && b.Microbatches == 0 {
				b.Microbatches = 1
			}
			continue
		}
		// A served mode runs against a server; an unknown one is left
		// for validate to name.
		if m, err := partition.ParseRemoteMode(b.Mode); err == nil && m.Served() {
			if b.Server == "" {
				b.Server = ServerSpawn
			}
			if b.Transport == "" {
				b.Transport = "grpc"
			}
		}
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if w.Batch == 0 {
			w.Batch = 1
		}
		if w.DType == "" {
			w.DType = "fp32"
		}
	}
}

// Validate checks every field; each problem names its path, value and what
// is allowed.
func (s *Spec) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Version != SpecVersion {
		add("version: must be %d (got %d)", SpecVersion, s.Version)
	}
	if !validName(s.Name) {
		add("name: must be 1–64 characters of letters, digits, '-', '_', '.' (got %q)", s.Name)
	}
	if s.Warmup < 0 || s.Warmup > 100 {
		add("warmup: must be in [0, 100] (got %d)", s.Warmup)
	}
	if s.Runs < 2 || s.Runs > 10000 {
		add("runs: must be in [2, 10000]: a standard deviation needs two runs (got %d)", s.Runs)
	}
	for i, m := range s.Metrics {
		if !contains(Metrics, m) {
			add("metrics[%d]: unknown metric %q (allowed: %s)", i, m, strings.Join(Metrics, ", "))
		}
	}
	if !contains(configs.Presets("hardware"), s.Hardware) {
		add("hardware: unknown GPU preset %q (allowed: %s)", s.Hardware, strings.Join(configs.Presets("hardware"), ", "))
	}
	if _, err := topology.ParseClientLink("link", s.Link); err != nil {
		add("%v", err)
	}
	if s.Backend != configs.BackendCPU && s.Backend != configs.BackendCUDA {
		add("backend: must be %q or %q (got %q)", configs.BackendCPU, configs.BackendCUDA, s.Backend)
	}
	if len(s.Baselines) == 0 {
		add("baseline: at least one [[baseline]] is required")
	}
	if len(s.Workloads) == 0 {
		add("workload: at least one [[workload]] is required")
	}
	seen := map[string]bool{}
	for i, b := range s.Baselines {
		p := fmt.Sprintf("baseline[%d]", i)
		if why, ok := refusedBaselines[strings.ToLower(b.Name)]; ok {
			add("%s.name: %q: partbench has no %s executor; its baselines are local, naive, kv and stateful remote modes and local partitionings (kind = \"partitioned\")", p, b.Name, why)
			continue
		}
		if !validName(b.Name) {
			add("%s.name: must be 1–64 characters of letters, digits, '-', '_', '.' (got %q)", p, b.Name)
		}
		if seen["b:"+b.Name] {
			add("%s.name: %q appears twice", p, b.Name)
		}
		seen["b:"+b.Name] = true
		if b.Kind != "" {
			s.validatePartitioned(p, b, add)
			continue
		}
		if b.TP != 0 || b.PP != 0 || b.Microbatches != 0 {
			add("%s: tp, pp and microbatches belong to kind = %q (got tp %d, pp %d, microbatches %d for mode %q)", p, KindPartitioned, b.TP, b.PP, b.Microbatches, b.Mode)
		}
		m, err := partition.ParseRemoteMode(b.Mode)
		if err != nil {
			add("%s.mode: %v", p, err)
			continue
		}
		if !m.Served() {
			if b.Server != "" || b.Transport != "" {
				add("%s: mode local runs in this process: server and transport must be empty (got server %q, transport %q)", p, b.Server, b.Transport)
			}
			continue
		}
		if b.Server != ServerSpawn && b.Server != ServerInProcess {
			add("%s.server: must be %q or %q (got %q)", p, ServerSpawn, ServerInProcess, b.Server)
		}
		if b.Transport != "grpc" && b.Transport != "tcp" {
			add("%s.transport: must be \"grpc\" or \"tcp\" (got %q)", p, b.Transport)
		}
	}
	for i, w := range s.Workloads {
		p := fmt.Sprintf("workload[%d]", i)
		if why, ok := refusedKinds[strings.ToLower(w.Kind)]; ok {
			add("%s.kind: %q is not a transformer Program (%s); partbench runs dense transformers only (see docs/suite.md)", p, w.Kind, why)
			continue
		}
		if why, ok := refusedKinds[strings.ToLower(w.Model)]; ok {
			add("%s.model: %q is not a transformer Program (%s); partbench runs dense transformers only (see docs/suite.md)", p, w.Model, why)
			continue
		}
		if !validName(w.Name) {
			add("%s.name: must be 1–64 characters of letters, digits, '-', '_', '.' (got %q)", p, w.Name)
		}
		if seen["w:"+w.Name] {
			add("%s.name: %q appears twice", p, w.Name)
		}
		seen["w:"+w.Name] = true
		if !contains(kinds, w.Kind) {
			add("%s.kind: must be one of %s (got %q)", p, strings.Join(kinds, ", "), w.Kind)
			continue
		}
		if _, err := w.Config(s); err != nil {
			add("%s: %v", p, err)
		}
	}
	return errors.Join(errs...)
}

// validatePartitioned checks a kind = "partitioned" baseline and that it
// can run every workload of s.
func (s *Spec) validatePartitioned(p string, b Baseline, add func(string, ...any)) {
	if b.Kind != KindPartitioned {
		add("%s.kind: must be %q or left out for a remote mode (got %q)", p, KindPartitioned, b.Kind)
		return
	}
	if b.Mode != "" || b.Server != "" || b.Transport != "" {
		add("%s: kind %q runs in-process ranks: mode, server and transport must be empty (got mode %q, server %q, transport %q)", p, b.Kind, b.Mode, b.Server, b.Transport)
	}
	ok := true
	for _, f := range []struct {
		name string
		v    int
	}{{"tp", b.TP}, {"pp", b.PP}, {"microbatches", b.Microbatches}} {
		if f.v < 1 || f.v > 64 {
			add("%s.%s: must be in [1, 64] (got %d)", p, f.name, f.v)
			ok = false
		}
	}
	if ok && b.TP*b.PP < 2 {
		add("%s: tp × pp must be at least 2: one rank is the local baseline (mode = \"local\") (got tp %d, pp %d)", p, b.TP, b.PP)
		ok = false
	}
	if s.Backend != configs.BackendCPU {
		add("%s: kind %q runs its ranks in this process on the cpu backend (exec/localcomm); backend must be %q (got %q)", p, b.Kind, configs.BackendCPU, s.Backend)
		ok = false
	}
	if !ok {
		return
	}
	for j, w := range s.Workloads {
		if _, bad := refusedKinds[strings.ToLower(w.Kind)]; bad || !contains(kinds, w.Kind) {
			continue // the workload's own error says why
		}
		if _, err := w.Config(s); err != nil {
			continue // likewise
		}
		if w.DType != "fp32" {
			add("%s (%s) cannot run workload[%d] (%s): the cpu backend computes in fp32, so the counted bytes match the Program's only with dtype = \"fp32\" (got %q)", p, b.Name, j, w.Name, w.DType)
			continue
		}
		if _, err := w.PartitionedConfig(s, b); err != nil {
			add("%s (%s) cannot run workload[%d] (%s): %v", p, b.Name, j, w.Name, err)
		}
	}
}

// PartitionedConfig is w's config split over b's tp × pp ranks with b's
// micro-batches, on one node of tp × pp GPUs of Spec.Hardware (the model
// prices the plan there; the suite runs its ranks in this process).
func (w Workload) PartitionedConfig(s *Spec, b Baseline) (*configs.Config, error) {
	cfg, err := w.Config(s)
	if err != nil {
		return nil, err
	}
	c := *cfg
	c.Name = cfg.Name + "-" + b.Name
	c.Parallel.TP, c.Parallel.PP, c.Parallel.DP, c.Parallel.Microbatches = b.TP, b.PP, 1, b.Microbatches
	c.Parallel.LayerMap = nil
	c.Topology.Name = fmt.Sprintf("local-1x%d", b.TP*b.PP)
	c.Topology.Nodes, c.Topology.GPUsPerNode = 1, b.TP*b.PP
	c.Topology.Intra.Name = "in-process ranks (priced as NVLink)"
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if _, err := partition.NewPlan(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// CellConfig is the config a cell runs: the workload's single-rank config,
// or its partitioning for a partitioned baseline.
func (c Cell) Config(s *Spec) (*configs.Config, error) {
	if c.Baseline.Partitioned() {
		return c.Workload.PartitionedConfig(s, c.Baseline)
	}
	return c.Workload.Config(s)
}

// Config is the workload as a single-rank partbench config, built as TOML
// and read by configs.Parse so every configs validation applies.
func (w Workload) Config(s *Spec) (*configs.Config, error) {
	var m configs.Model
	switch {
	case (w.Model == "") == (w.From == ""):
		return nil, fmt.Errorf("model %q, config %q: give exactly one", w.Model, w.From)
	case w.From != "":
		base, err := configs.Load(w.From)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if base.Parallel.TP*base.Parallel.PP != 1 {
			return nil, fmt.Errorf("config: %s has tp = %d, pp = %d: a suite cell runs one rank (tp = pp = 1)", w.From, base.Parallel.TP, base.Parallel.PP)
		}
		m = base.Model
	case !contains(configs.Presets("model"), w.Model):
		return nil, fmt.Errorf("model: unknown model preset %q (allowed: %s)", w.Model, strings.Join(configs.Presets("model"), ", "))
	default:
		data, err := fs.ReadFile(configs.Files, "model/"+w.Model+".toml")
		if err != nil {
			return nil, err
		}
		if _, err := toml.Decode(string(data), &m); err != nil {
			return nil, fmt.Errorf("model preset %s: %w", w.Model, err)
		}
	}
	if w.Kind == KindMicrobench && w.Layers != 1 {
		return nil, fmt.Errorf("layers: a microbench runs one transformer block: must be 1 (got %d)", w.Layers)
	}
	m.Preset, m.DType = "", w.DType
	if w.Layers != 0 {
		m.Layers = w.Layers
	}
	if w.Arch != "" {
		m.Arch = w.Arch
	}
	m.Encoder = w.Kind == KindEncoder
	out := w.OutputTokens
	phases := []string{"prefill", "decode"}
	switch w.Kind {
	case KindPrefill, KindEncoder, KindMicrobench:
		// The prefill request is the figure; the generation's one decode
		// step (output_tokens = 2, the smallest a config accepts) is not.
		if out != 0 && out != 2 {
			return nil, fmt.Errorf("output_tokens: a %s workload measures the prefill request: leave it out or set 2 (got %d)", w.Kind, out)
		}
		out = 2
	}
	if w.Kind == KindEncoder {
		phases = []string{"prefill"}
	}
	doc := struct {
		Version  int               `toml:"version"`
		Name     string            `toml:"name"`
		Model    configs.Model     `toml:"model"`
		Workload configs.Workload  `toml:"workload"`
		Parallel map[string]int    `toml:"parallel"`
		Hardware map[string]string `toml:"hardware"`
		Run      map[string]int    `toml:"run"`
	}{1, s.Name + "-" + w.Name, m,
		configs.Workload{Batch: w.Batch, Context: w.Context, OutputTokens: out, Phases: phases},
		map[string]int{"tp": 1, "pp": 1}, map[string]string{"preset": s.Hardware}, map[string]int{"warmup": 0, "iterations": 1, "seed": 7}}
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return nil, err
	}
	b.WriteString("[topology]\nname = \"one-gpu\"\nnodes = 1\ngpus_per_node = 1\n" +
		"[topology.intra_node]\nclass = \"nvlink\"\nname = \"none (one GPU)\"\nbytes_per_s = 450e9\nlatency_s = 1e-6\n" +
		"[topology.inter_node]\nclass = \"network\"\nname = \"none (one node)\"\nbytes_per_s = 50e9\nlatency_s = 5e-6\n")
	return configs.Parse(strings.NewReader(b.String()), "workload "+w.Name)
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Cell is one baseline × workload.
type Cell struct {
	Baseline Baseline
	Workload Workload
}

// ID is the cell's key in the run log.
func (c Cell) ID() string { return c.Baseline.Name + "/" + c.Workload.Name }

// Cells is the matrix in run order: workload by workload, every baseline.
func (s *Spec) Cells() []Cell {
	var out []Cell
	for _, w := range s.Workloads {
		for _, b := range s.Baselines {
			out = append(out, Cell{Baseline: b, Workload: w})
		}
	}
	return out
}
