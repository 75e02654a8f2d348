package configs

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/topology"
)

// Runtime is the engine that drives the GPUs: what its host does per step
// and per kernel, whether decode runs as a CUDA graph, and which all-reduce
// it calls. A config's [runtime] section (preset = "vllm", or every key
// inline) or --runtime NAME replaces the hardware's fixed-cost keys with
// the runtime's (docs/costmodel.md, "Runtime profiles"); without one the
// hardware preset's keys stand (the NeMo-fitted 2 ms + 6 µs per kernel, the
// same numbers as the "nemo" profile).
type Runtime struct {
	Preset string `toml:"preset" json:"preset,omitempty"`
	// Name names the profile; empty: no runtime chosen.
	Name string `toml:"name" json:"name,omitempty"`
	// Engine says what the profile stands for, with its version.
	Engine string `toml:"engine" json:"engine,omitempty"`

	StepOverheadS float64 `toml:"step_overhead_s" json:"step_overhead_s"`
	StepPerSeqS   float64 `toml:"step_per_seq_s" json:"step_per_seq_s"`
	StepPerTokenS float64 `toml:"step_per_token_s" json:"step_per_token_s"`
	KernelLaunchS float64 `toml:"kernel_launch_s" json:"kernel_launch_s"`
	CUDAGraphs    bool    `toml:"cuda_graphs" json:"cuda_graphs"`
	GraphLaunchS  float64 `toml:"graph_launch_s" json:"graph_launch_s"`
	GraphKernelS  float64 `toml:"graph_kernel_s" json:"graph_kernel_s"`
	// AllReduce is "nccl" or "custom" (topology.GPU.AllReduce).
	AllReduce               string  `toml:"all_reduce" json:"all_reduce"`
	CustomAllReduceMaxBytes int64   `toml:"custom_all_reduce_max_bytes" json:"custom_all_reduce_max_bytes,omitempty"`
	CustomAllReduceFixedS   float64 `toml:"custom_all_reduce_fixed_s" json:"custom_all_reduce_fixed_s,omitempty"`
	// Ranges are the stated uncertainty of the host costs: they replace the
	// hardware's ranges for step_overhead_s and kernel_launch_s.
	Ranges RuntimeRanges `toml:"ranges" json:"ranges"`
}

// RuntimeRanges gives [low, high] for a runtime's uncertain host costs.
type RuntimeRanges struct {
	StepOverheadS [2]float64 `toml:"step_overhead_s" json:"step_overhead_s"`
	KernelLaunchS [2]float64 `toml:"kernel_launch_s" json:"kernel_launch_s"`
}

// Set reports whether a runtime was chosen.
func (r Runtime) Set() bool { return r.Name != "" }

// Apply returns g with the runtime's fixed costs, graph setting and
// all-reduce in place of its own; an unset runtime returns g unchanged.
func (r Runtime) Apply(g topology.GPU) topology.GPU {
	if !r.Set() {
		return g
	}
	g.StepOverheadS, g.StepPerSeqS, g.StepPerTokenS = r.StepOverheadS, r.StepPerSeqS, r.StepPerTokenS
	g.KernelLaunchS, g.CUDAGraphs, g.GraphLaunchS, g.GraphKernelS = r.KernelLaunchS, r.CUDAGraphs, r.GraphLaunchS, r.GraphKernelS
	g.AllReduce, g.CustomAllReduceMaxBytes, g.CustomAllReduceFixedS = r.AllReduce, r.CustomAllReduceMaxBytes, r.CustomAllReduceFixedS
	g.Ranges.StepOverheadS, g.Ranges.KernelLaunchS = r.Ranges.StepOverheadS, r.Ranges.KernelLaunchS
	return g
}

// Validate checks a chosen runtime; field is the config path used in errors
// ("runtime", or "runtime/vllm.toml" for a preset).
func (r Runtime) Validate(field string) error {
	if !r.Set() {
		if r != (Runtime{}) {
			return fmt.Errorf("%s.name: a [runtime] section needs a name, or preset = one of %s", field, strings.Join(Presets("runtime"), ", "))
		}
		return nil
	}
	f := func(name string) string { return field + "." + name }
	for _, c := range []struct {
		name, unit string
		v, hi      float64
	}{
		{"step_overhead_s", "seconds", r.StepOverheadS, topology.MaxStepOverhead},
		{"step_per_seq_s", "seconds", r.StepPerSeqS, topology.MaxKernelLaunch},
		{"step_per_token_s", "seconds", r.StepPerTokenS, topology.MaxKernelLaunch},
		{"kernel_launch_s", "seconds", r.KernelLaunchS, topology.MaxKernelLaunch},
		{"graph_launch_s", "seconds", r.GraphLaunchS, topology.MaxStepOverhead},
		{"graph_kernel_s", "seconds", r.GraphKernelS, topology.MaxKernelLaunch},
		{"custom_all_reduce_fixed_s", "seconds", r.CustomAllReduceFixedS, topology.MaxKernelLaunch},
		{"custom_all_reduce_max_bytes", "bytes", float64(r.CustomAllReduceMaxBytes), topology.MaxL2Bytes},
	} {
		if err := topology.InRange(f(c.name), c.v, 0, c.hi, c.unit); err != nil {
			return err
		}
	}
	switch r.AllReduce {
	case topology.AllReduceNCCL:
	case topology.AllReduceCustom:
		if r.CustomAllReduceMaxBytes <= 0 {
			return fmt.Errorf("%s: all_reduce = %q needs the largest message the custom kernel takes, > 0 bytes (got %d)", f("custom_all_reduce_max_bytes"), r.AllReduce, r.CustomAllReduceMaxBytes)
		}
	default:
		return fmt.Errorf("%s: must be %q or %q (got %q)", f("all_reduce"), topology.AllReduceNCCL, topology.AllReduceCustom, r.AllReduce)
	}
	for _, c := range []struct {
		name  string
		rg    [2]float64
		v, hi float64
	}{
		{"step_overhead_s", r.Ranges.StepOverheadS, r.StepOverheadS, topology.MaxStepOverhead},
		{"kernel_launch_s", r.Ranges.KernelLaunchS, r.KernelLaunchS, topology.MaxKernelLaunch},
	} {
		if c.rg == [2]float64{} {
			continue
		}
		if !(c.rg[0] >= 0 && c.rg[0] <= c.v && c.v <= c.rg[1] && c.rg[1] <= c.hi) {
			return fmt.Errorf("%s.ranges.%s: must be [low, high] with 0 ≤ low ≤ %g (the value) ≤ high ≤ %g (got [%g, %g])",
				field, c.name, c.v, c.hi, c.rg[0], c.rg[1])
		}
	}
	return nil
}

// LoadRuntime resolves a runtime preset by name (configs/runtime/NAME.toml):
// what --runtime on model, search and serving reads.
func LoadRuntime(name string) (Runtime, error) {
	var r Runtime
	data, err := fs.ReadFile(Files, path.Join("runtime", name+".toml"))
	if err != nil || name == "" {
		return r, fmt.Errorf("unknown runtime %q (available: %s)", name, strings.Join(Presets("runtime"), ", "))
	}
	if _, err := decodeStrict(data, &r, "runtime/"+name+".toml"); err != nil {
		return r, err
	}
	r.Preset = name
	return r, r.Validate("runtime/" + name + ".toml")
}

// SetRuntime puts a runtime on a loaded config: its [runtime] and the
// hardware's fixed costs; the config is validated again.
func (c *Config) SetRuntime(r Runtime) error {
	c.Runtime = r
	c.Hardware.GPU = r.Apply(c.Hardware.GPU)
	return c.Validate()
}

// ApplyRuntimeFlag loads the --runtime preset and puts it on every config;
// "" leaves them as they are.
func ApplyRuntimeFlag(cfgs []*Config, name string) error {
	if name == "" {
		return nil
	}
	r, err := LoadRuntime(name)
	if err != nil {
		return fmt.Errorf("--runtime: %w", err)
	}
	for _, c := range cfgs {
		if err := c.SetRuntime(r); err != nil {
			return fmt.Errorf("--runtime %s: %s: %w", name, c.Name, err)
		}
	}
	return nil
}

// RuntimeTOML writes a runtime as a [runtime] section (what --fit prints).
func RuntimeTOML(r Runtime) (string, error) {
	var b bytes.Buffer
	err := toml.NewEncoder(&b).Encode(struct {
		Runtime Runtime `toml:"runtime"`
	}{r})
	return b.String(), err
}

// ReadMeasuredFile reads a file of measured results (model --measured) with
// ReadFile's limits: a regular file of at most MaxConfigBytes.
func ReadMeasuredFile(name string) ([]byte, error) { return readFile(name, "measured results") }
