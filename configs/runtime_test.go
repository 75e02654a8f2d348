package configs

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/topology"
)

// The engines the runtime presets stand for; each must load and validate.
func TestEveryRuntimePresetLoads(t *testing.T) {
	want := []string{"deepspeed-inference", "gpt-fast", "hf-generate", "nemo", "partbench-cuda", "sglang", "tensorrt-llm", "vllm"}
	if got := strings.Join(Presets("runtime"), ","); got != strings.Join(want, ",") {
		t.Fatalf("runtime presets %s, want %s", got, strings.Join(want, ","))
	}
	for _, n := range want {
		r, err := LoadRuntime(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if r.Name != n || r.Preset != n || r.Engine == "" {
			t.Errorf("%s: name %q preset %q engine %q", n, r.Name, r.Preset, r.Engine)
		}
		// Every preset states the uncertainty of its host costs.
		if r.Ranges.StepOverheadS == [2]float64{} || r.Ranges.KernelLaunchS == [2]float64{} {
			t.Errorf("%s: no ranges %+v", n, r.Ranges)
		}
	}
}

// nemo carries the numbers every hardware preset has (the NeMo fit), so
// choosing it changes no estimate.
func TestNemoRuntimeIsTheHardwareDefault(t *testing.T) {
	r, err := LoadRuntime("nemo")
	if err != nil {
		t.Fatal(err)
	}
	for _, hw := range Presets("hardware") {
		g, _, err := LoadSystem(hw, "dgx-h100x2")
		if err != nil {
			t.Fatal(err)
		}
		a := r.Apply(g)
		if a.AllReduce != topology.AllReduceNCCL {
			t.Errorf("%s: nemo all-reduce %q", hw, a.AllReduce)
		}
		a.AllReduce = g.AllReduce // "nccl" and "" (no runtime) are the same choice
		if a != g {
			t.Errorf("%s: nemo changes the GPU:\n%+v\n%+v", hw, a, g)
		}
	}
}

func TestRuntimeSectionAndPresetInAConfig(t *testing.T) {
	base := `version = 1
[model]
preset = "llama-2-7b"
[workload]
batch = 8
context = 256
output_tokens = 16
[parallel]
tp = 8
pp = 1
[hardware]
preset = "h100-sxm"
[topology]
preset = "dgx-h100x2"
nodes = 1
[run]
iterations = 1
`
	// A preset, one key overridden: the file's key wins, the GPU takes both.
	c, err := Parse(strings.NewReader(base+"[runtime]\npreset = \"vllm\"\nstep_per_seq_s = 50e-6\n"), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	g := c.Hardware.GPU
	if c.Runtime.Name != "vllm" || g.StepPerSeqS != 50e-6 || g.StepOverheadS != 1e-3 || !g.CUDAGraphs || g.AllReduce != topology.AllReduceCustom ||
		g.CustomAllReduceMaxBytes != 8<<20 || g.Ranges.StepOverheadS != [2]float64{0.5e-3, 3e-3} {
		t.Errorf("runtime %+v applied as %+v", c.Runtime, g)
	}
	// SetRuntime (what --runtime does) replaces the file's.
	hf, err := LoadRuntime("hf-generate")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetRuntime(hf); err != nil {
		t.Fatal(err)
	}
	if g := c.Hardware.GPU; g.CUDAGraphs || g.AllReduce != topology.AllReduceNCCL || g.StepOverheadS != 4e-3 || g.KernelLaunchS != 15e-6 || g.StepPerSeqS != 10e-6 {
		t.Errorf("--runtime hf-generate gave %+v", g)
	}
	for _, tc := range []struct{ section, want string }{
		{"[runtime]\npreset = \"trt\"\n", `runtime.preset: unknown preset "trt" (available: deepspeed-inference, gpt-fast`},
		{"[runtime]\nstep_overhead_s = 1e-3\n", "runtime.name: a [runtime] section needs a name, or preset = one of"},
		{"[runtime]\npreset = \"vllm\"\nall_reduce = \"mpi\"\n", `runtime.all_reduce: must be "nccl" or "custom" (got "mpi")`},
		{"[runtime]\npreset = \"vllm\"\ncustom_all_reduce_max_bytes = 0\n", "runtime.custom_all_reduce_max_bytes: all_reduce = \"custom\" needs the largest message"},
		{"[runtime]\npreset = \"vllm\"\nstep_per_seq_s = -1e-6\n", "runtime.step_per_seq_s"},
		{"[runtime]\npreset = \"vllm\"\nstep_overhead_s = 5e-3\n", "runtime.ranges.step_overhead_s: must be [low, high] with 0 ≤ low ≤ 0.005 (the value) ≤ high"},
		{"[runtime]\npreset = \"vllm\"\nstep_per_sequence_s = 1e-6\n", "unknown key runtime.step_per_sequence_s"},
	} {
		_, err := Parse(strings.NewReader(base+tc.section), "t.toml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "t.toml") {
			t.Errorf("%q: error %v, want one naming %q", tc.section, err, tc.want)
		}
	}
	if err := ApplyRuntimeFlag([]*Config{c}, "trtllm"); err == nil || !strings.Contains(err.Error(), `--runtime: unknown runtime "trtllm" (available: deepspeed-inference, gpt-fast, hf-generate, nemo, partbench-cuda, sglang, tensorrt-llm, vllm)`) {
		t.Errorf("unknown --runtime: %v", err)
	}
}

// What --fit prints reads back as a config's [runtime] section.
func TestRuntimeTOMLRoundTrip(t *testing.T) {
	r, err := LoadRuntime("tensorrt-llm")
	if err != nil {
		t.Fatal(err)
	}
	s, err := RuntimeTOML(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Runtime Runtime `toml:"runtime"`
	}
	if _, err := decodeStrict([]byte(s), &back, "fit.toml"); err != nil {
		t.Fatal(err)
	}
	if back.Runtime != r {
		t.Errorf("round trip:\n%+v\n%+v", back.Runtime, r)
	}
}
