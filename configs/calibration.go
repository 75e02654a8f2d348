package configs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/partbench/partbench/topology"
)

// Calibration is a hardware profile measured on one machine by
// `partbench calibrate`: a [hardware] section in the schema of the hardware
// presets, a [topology] section whose intra-node link is the path the ranks
// used, and the evidence behind every figure (spreads over repeats, the
// per-shape GEMM table, the cache curve and the communication samples).
type Calibration struct {
	Hardware topology.GPU      `toml:"hardware"`
	Topology topology.Topology `toml:"topology"`
	// Spread holds min/median/max over repeats of every measured figure, keyed
	// by the figure's name (see SpreadKeys).
	Spread map[string]Spread `toml:"spread"`
	Info   CalibrationInfo   `toml:"calibration"`
	GEMM   []GEMMSample      `toml:"gemm"`
	Cache  []CacheSample     `toml:"cache"`
	Comm   []CommSample      `toml:"comm"`
	Ops    []OpSample        `toml:"op"`

	// Source is the file it was loaded from.
	Source string `toml:"-"`
	// Comments, keyed like Spread or by a hardware/topology key
	// ("hardware.sms", "topology.intra_node.latency_s"), are written after the
	// key's value by WriteTOML; they are not read back.
	Comments map[string]string `toml:"-"`
}

// CalibrationInfo says where and how a calibration was measured.
type CalibrationInfo struct {
	Host    string `toml:"host"`
	CPU     string `toml:"cpu"`
	Cores   int    `toml:"cores"`
	Backend string `toml:"backend"`
	// Date is RFC 3339.
	Date    string `toml:"date"`
	Version string `toml:"version"`
	// Ranks is how many ranks the communication figures were measured among.
	Ranks   int  `toml:"ranks"`
	Repeats int  `toml:"repeats"`
	Quick   bool `toml:"quick"`
	// Notes are caveats found while measuring.
	Notes []string `toml:"notes"`
}

// Spread is the minimum, median and maximum of a figure over N repeats.
type Spread struct {
	Min    float64 `toml:"min"`
	Median float64 `toml:"median"`
	Max    float64 `toml:"max"`
	N      int     `toml:"n"`
}

// GEMMSample is one GEMM shape of a Program, timed through the CPU backend's
// sgemm. M, N, K are the Program's shape; MeasuredM and MeasuredN the shape
// actually timed (smaller when the Program's would exceed the time or memory
// budget).
type GEMMSample struct {
	Source      string  `toml:"source"`
	M           int     `toml:"m"`
	N           int     `toml:"n"`
	K           int     `toml:"k"`
	MeasuredM   int     `toml:"measured_m"`
	MeasuredN   int     `toml:"measured_n"`
	FLOPs       int64   `toml:"flops"`
	TimeMinS    float64 `toml:"time_min_s"`
	TimeMedianS float64 `toml:"time_median_s"`
	TimeMaxS    float64 `toml:"time_max_s"`
	FLOPsPerS   float64 `toml:"flops_per_s"`
	// ModelTimeS is the roofline time of the measured shape with the
	// calibrated figures.
	ModelTimeS float64 `toml:"model_time_s"`
}

// CacheSample is one point of the working-set curve: the read bandwidth of a
// buffer of Bytes read again and again.
type CacheSample struct {
	Bytes           int64   `toml:"bytes"`
	BytesPerSMin    float64 `toml:"bytes_per_s_min"`
	BytesPerSMedian float64 `toml:"bytes_per_s_median"`
	BytesPerSMax    float64 `toml:"bytes_per_s_max"`
	ReuseOverStream float64 `toml:"reuse_over_stream"`
}

// CommSample is one communication size: all_reduce over Ranks ranks, or
// sendrecv (one-way time of a ping-pong between two ranks).
type CommSample struct {
	Op          string  `toml:"op"`
	Ranks       int     `toml:"ranks"`
	Bytes       int64   `toml:"bytes"`
	TimeMinS    float64 `toml:"time_min_s"`
	TimeMedianS float64 `toml:"time_median_s"`
	TimeMaxS    float64 `toml:"time_max_s"`
	// ModelTimeS, Algo and Proto are the collective model's answer with the
	// calibrated link.
	ModelTimeS float64 `toml:"model_time_s"`
	Algo       string  `toml:"algo"`
	Proto      string  `toml:"proto"`
}

// OpSample is the time of every op of one kind in one phase of a one-rank
// config's Programs: measured through the CPU backend (sum of per-op
// medians) and modeled with the calibrated profile.
type OpSample struct {
	Config    string  `toml:"config"`
	Phase     string  `toml:"phase"`
	Kind      string  `toml:"kind"`
	Calls     int     `toml:"calls"`
	MeasuredS float64 `toml:"measured_s"`
	ModelS    float64 `toml:"model_s"`
}

// SpreadKeys are the figures a calibration measures, each with a spread.
var SpreadKeys = []string{
	"fp32_flops_per_s", "hbm_bytes_per_s", "l2_bytes", "l2_bytes_per_s", "kernel_launch_s",
	"link_bytes_per_s", "link_latency_s",
}

// Calibration backends.
const (
	BackendCPU  = "cpu"
	BackendCUDA = "cuda"
)

// LoadCalibration reads a calibration file strictly (unknown keys are errors
// naming their path) and validates it.
func LoadCalibration(path string) (*Calibration, error) {
	data, err := readFile(path, "calibration")
	if err != nil {
		return nil, err
	}
	return ParseCalibration(bytes.NewReader(data), path)
}

// ParseCalibration decodes and validates a calibration; source names the
// input in errors.
func ParseCalibration(r io.Reader, source string) (*Calibration, error) {
	data, err := readBounded(r, source, "calibration")
	if err != nil {
		return nil, err
	}
	var c Calibration
	if err := decodeStrict(data, &c, source); err != nil {
		return nil, err
	}
	c.Source = source
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &c, nil
}

// Validate checks the hardware and topology as a config's are checked, and
// every spread.
func (c *Calibration) Validate() error {
	var errs []error
	if err := c.Hardware.Validate("hardware"); err != nil {
		errs = append(errs, err)
	}
	if err := c.Topology.Validate("topology"); err != nil {
		errs = append(errs, err)
	}
	switch c.Info.Backend {
	case BackendCPU, BackendCUDA:
	default:
		errs = append(errs, fmt.Errorf("calibration.backend: must be %q or %q (got %q)", BackendCPU, BackendCUDA, c.Info.Backend))
	}
	if c.Info.Ranks != c.Topology.Size() {
		errs = append(errs, fmt.Errorf("calibration.ranks: must equal topology nodes × gpus_per_node = %d (got %d)", c.Topology.Size(), c.Info.Ranks))
	}
	known := map[string]bool{}
	for _, k := range SpreadKeys {
		known[k] = true
	}
	keys := make([]string, 0, len(c.Spread))
	for k := range c.Spread {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := c.Spread[k]
		switch {
		case !known[k]:
			errs = append(errs, fmt.Errorf("spread.%s: unknown figure (known: %s)", k, strings.Join(SpreadKeys, ", ")))
		case !(s.Min <= s.Median && s.Median <= s.Max) || math.IsInf(s.Min, 0) || math.IsInf(s.Max, 0):
			errs = append(errs, fmt.Errorf("spread.%s: must have finite min ≤ median ≤ max (got %g, %g, %g)", k, s.Min, s.Median, s.Max))
		case s.N < 1:
			errs = append(errs, fmt.Errorf("spread.%s.n: must be ≥ 1 (got %d)", k, s.N))
		}
	}
	return errors.Join(errs...)
}

// Ranks is the number of ranks the link figures were measured among.
func (c *Calibration) Ranks() int { return c.Topology.Size() }

// Apply replaces cfg's hardware with the calibrated profile and its links
// with the calibrated link, keeping cfg's nodes × gpus_per_node. It returns
// notes on what was replaced and where figures are extrapolated. The caller
// validates cfg afterwards (a dtype the profile lacks fails there).
func (c *Calibration) Apply(cfg *Config) []string {
	var notes []string
	src := c.Source
	if src == "" {
		src = "calibration"
	}
	notes = append(notes, fmt.Sprintf("hardware %q replaced by the calibrated profile %q (%s, measured %s)", cfg.Hardware.Name, c.Hardware.Name, src, c.Info.Date))
	cfg.Hardware.Preset = ""
	cfg.Hardware.GPU = c.Hardware

	measured := c.Ranks()
	if measured < 2 {
		return append(notes, fmt.Sprintf("the calibration measured no link (%d rank): topology %q keeps its links", measured, cfg.Topology.Name))
	}
	link := c.Topology.Intra
	cfg.Topology.Preset = ""
	cfg.Topology.Intra = link
	if c.Topology.Nodes > 1 {
		cfg.Topology.Inter = c.Topology.Inter
	} else {
		cfg.Topology.Inter = link
	}
	want := cfg.Topology.Size()
	switch {
	case measured < want:
		notes = append(notes, fmt.Sprintf("the calibration measured %d ranks, the config has %d: its link (%s, %.3g B/s, %.3g s) is applied to both intra- and inter-node links and extrapolated to %d ranks",
			measured, want, link.Name, link.BytesPerS, link.LatencyS, want))
	case c.Topology.Nodes == 1 && cfg.Topology.Nodes > 1:
		notes = append(notes, fmt.Sprintf("the calibration measured one host: its link (%s) stands for the config's inter-node link too", link.Name))
	default:
		notes = append(notes, fmt.Sprintf("topology %q links replaced by the calibrated link (%s, %.3g B/s, %.3g s)", cfg.Topology.Name, link.Name, link.BytesPerS, link.LatencyS))
	}
	return notes
}

// WriteTOML writes the calibration in the schema LoadCalibration reads,
// after the header lines (each written as a comment). Figures keep full
// precision, so a written calibration loads back equal.
func (c *Calibration) WriteTOML(w io.Writer, header []string) error {
	var b strings.Builder
	for _, h := range header {
		fmt.Fprintf(&b, "# %s\n", h)
	}
	kv := func(section, key, value string) {
		fmt.Fprintf(&b, "%s = %s", key, value)
		if cm := c.Comments[section+key]; cm != "" {
			fmt.Fprintf(&b, "  # %s", cm)
		}
		b.WriteByte('\n')
	}
	g := c.Hardware
	b.WriteString("\n[hardware]\n")
	for _, f := range []struct{ key, value string }{
		{"name", tomlString(g.Name)},
		{"fp32_flops_per_s", tomlFloat(g.FP32FLOPsPerS)},
		{"fp16_flops_per_s", tomlFloat(g.FP16FLOPsPerS)},
		{"bf16_flops_per_s", tomlFloat(g.BF16FLOPsPerS)},
		{"fp8_flops_per_s", tomlFloat(g.FP8FLOPsPerS)},
		{"hbm_bytes", strconv.FormatInt(g.HBMBytes, 10)},
		{"hbm_reserved_bytes", strconv.FormatInt(g.HBMReservedBytes, 10)},
		{"hbm_bytes_per_s", tomlFloat(g.HBMBytesPerS)},
		{"l2_bytes", strconv.FormatInt(g.L2Bytes, 10)},
		{"l2_usable_fraction", tomlFloat(g.L2UsableFraction)},
		{"l2_bytes_per_s", tomlFloat(g.L2BytesPerS)},
		{"sms", strconv.Itoa(g.SMs)},
		{"shared_mem_per_sm_bytes", strconv.FormatInt(g.SharedMemPerSM, 10)},
		{"kernel_launch_s", tomlFloat(g.KernelLaunchS)},
		{"compute_efficiency", tomlFloat(g.ComputeEfficiency)},
		{"hbm_efficiency", tomlFloat(g.HBMEfficiency)},
	} {
		kv("hardware.", f.key, f.value)
	}

	t := c.Topology
	b.WriteString("\n[topology]\n")
	kv("topology.", "name", tomlString(t.Name))
	kv("topology.", "nodes", strconv.Itoa(t.Nodes))
	kv("topology.", "gpus_per_node", strconv.Itoa(t.GPUsPerNode))
	for _, l := range []struct {
		key  string
		link topology.Link
		used bool
	}{{"intra_node", t.Intra, t.GPUsPerNode > 1 || t.Intra != (topology.Link{})}, {"inter_node", t.Inter, t.Nodes > 1 || t.Inter != (topology.Link{})}} {
		if !l.used {
			continue
		}
		sec := "topology." + l.key + "."
		fmt.Fprintf(&b, "\n[topology.%s]\n", l.key)
		kv(sec, "class", tomlString(string(l.link.Class)))
		kv(sec, "name", tomlString(l.link.Name))
		kv(sec, "bytes_per_s", tomlFloat(l.link.BytesPerS))
		kv(sec, "latency_s", tomlFloat(l.link.LatencyS))
		kv(sec, "nvswitch", strconv.FormatBool(l.link.Switch))
	}

	keys := make([]string, 0, len(c.Spread))
	for k := range c.Spread {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return spreadOrder(keys[i]) < spreadOrder(keys[j]) })
	for _, k := range keys {
		s := c.Spread[k]
		fmt.Fprintf(&b, "\n[spread.%s]", k)
		if cm := c.Comments["spread."+k]; cm != "" {
			fmt.Fprintf(&b, "  # %s", cm)
		}
		fmt.Fprintf(&b, "\nmin = %s\nmedian = %s\nmax = %s\nn = %d\n", tomlFloat(s.Min), tomlFloat(s.Median), tomlFloat(s.Max), s.N)
	}

	in := c.Info
	b.WriteString("\n[calibration]\n")
	kv("calibration.", "host", tomlString(in.Host))
	kv("calibration.", "cpu", tomlString(in.CPU))
	kv("calibration.", "cores", strconv.Itoa(in.Cores))
	kv("calibration.", "backend", tomlString(in.Backend))
	kv("calibration.", "date", tomlString(in.Date))
	kv("calibration.", "version", tomlString(in.Version))
	kv("calibration.", "ranks", strconv.Itoa(in.Ranks))
	kv("calibration.", "repeats", strconv.Itoa(in.Repeats))
	kv("calibration.", "quick", strconv.FormatBool(in.Quick))
	if len(in.Notes) > 0 {
		b.WriteString("notes = [\n")
		for _, n := range in.Notes {
			fmt.Fprintf(&b, "  %s,\n", tomlString(n))
		}
		b.WriteString("]\n")
	}

	if len(c.GEMM) > 0 {
		b.WriteString("\n# GEMM shapes of the Programs, timed through blas32.Gemm (the CPU backend's call).\n")
	}
	for _, s := range c.GEMM {
		fmt.Fprintf(&b, "[[gemm]]\nsource = %s\nm = %d\nn = %d\nk = %d\nmeasured_m = %d\nmeasured_n = %d\nflops = %d\n",
			tomlString(s.Source), s.M, s.N, s.K, s.MeasuredM, s.MeasuredN, s.FLOPs)
		fmt.Fprintf(&b, "time_min_s = %s\ntime_median_s = %s\ntime_max_s = %s\nflops_per_s = %s\nmodel_time_s = %s\n",
			tomlFloat(s.TimeMinS), tomlFloat(s.TimeMedianS), tomlFloat(s.TimeMaxS), tomlFloat(s.FLOPsPerS), tomlFloat(s.ModelTimeS))
	}
	if len(c.Cache) > 0 {
		b.WriteString("\n# Working-set curve: read bandwidth of a buffer read again and again.\n")
	}
	for _, s := range c.Cache {
		fmt.Fprintf(&b, "[[cache]]\nbytes = %d\nbytes_per_s_min = %s\nbytes_per_s_median = %s\nbytes_per_s_max = %s\nreuse_over_stream = %s\n",
			s.Bytes, tomlFloat(s.BytesPerSMin), tomlFloat(s.BytesPerSMedian), tomlFloat(s.BytesPerSMax), tomlFloat(s.ReuseOverStream))
	}
	if len(c.Comm) > 0 {
		b.WriteString("\n# Communication samples and the collective model's time with the calibrated link.\n")
	}
	for _, s := range c.Comm {
		fmt.Fprintf(&b, "[[comm]]\nop = %s\nranks = %d\nbytes = %d\ntime_min_s = %s\ntime_median_s = %s\ntime_max_s = %s\nmodel_time_s = %s\nalgo = %s\nproto = %s\n",
			tomlString(s.Op), s.Ranks, s.Bytes, tomlFloat(s.TimeMinS), tomlFloat(s.TimeMedianS), tomlFloat(s.TimeMaxS),
			tomlFloat(s.ModelTimeS), tomlString(s.Algo), tomlString(s.Proto))
	}
	if len(c.Ops) > 0 {
		b.WriteString("\n# Compute ops of a one-rank config, per phase and kind: measured through the CPU backend and modeled.\n")
	}
	for _, s := range c.Ops {
		fmt.Fprintf(&b, "[[op]]\nconfig = %s\nphase = %s\nkind = %s\ncalls = %d\nmeasured_s = %s\nmodel_s = %s\n",
			tomlString(s.Config), tomlString(s.Phase), tomlString(s.Kind), s.Calls, tomlFloat(s.MeasuredS), tomlFloat(s.ModelS))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func spreadOrder(k string) int {
	for i, s := range SpreadKeys {
		if s == k {
			return i
		}
	}
	return len(SpreadKeys)
}

// tomlFloat writes v so that it decodes as a float and back to v exactly.
func tomlFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}
