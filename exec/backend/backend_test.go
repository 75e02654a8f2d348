package backend

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
)

func fake(name string, auto bool, probeErr error) Backend {
	return Backend{Name: name, Auto: auto, Probe: func() error { return probeErr },
		New: func(launch.Env) (Rank, error) { return Rank{}, nil }}
}

func TestRegisterRefusesDuplicatesAndReservedNames(t *testing.T) {
	r := &Registry{}
	if err := r.Register(fake("gpu", true, nil)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    Backend
		want string
	}{
		{fake("gpu", false, nil), "registered twice"},
		{fake("auto", false, nil), `named "auto"`},
		{fake("", false, nil), `named ""`},
		{Backend{Name: "bare"}, "no constructor"},
	} {
		if err := r.Register(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Register(%q): %v, want %q", c.b.Name, err, c.want)
		}
	}
	if got := strings.Join(r.Names(), ","); got != "gpu" {
		t.Errorf("names %q after refusals", got)
	}
}

// auto: the first Auto backend whose probe passes, in registration order;
// a backend not marked Auto is never chosen, even when it could run.
func TestForRunAutoPolicy(t *testing.T) {
	r := &Registry{}
	for _, b := range []Backend{fake("a", true, errors.New("no device a")), fake("b", true, nil), fake("c", false, nil)} {
		if err := r.Register(b); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := r.ForRun(Auto); err != nil || b.Name != "b" {
		t.Errorf("auto = %q, %v; want b (a's probe fails)", b.Name, err)
	}
	if b, err := r.ForRun("a"); err != nil || b.Name != "a" {
		t.Errorf("a named: %q, %v (a named backend is not probed)", b.Name, err)
	}
	if _, err := r.ForRun("tpu"); err == nil || err.Error() != `--backend: must be a, b, c or auto (got "tpu")` {
		t.Errorf("unknown: %v", err)
	}

	r = &Registry{}
	for _, b := range []Backend{fake("cuda", true, errors.New("cuda: no driver")), fake("cpu", false, nil)} {
		if err := r.Register(b); err != nil {
			t.Fatal(err)
		}
	}
	// The message partbench has always given without a GPU.
	if _, err := r.ForRun(Auto); err == nil || err.Error() != "no GPU backend here (cuda: no driver): use --backend cpu to run on the CPU" {
		t.Errorf("auto without a device: %v", err)
	}
}

func TestDefaultRegistry(t *testing.T) {
	r := Default()
	if got := strings.Join(r.Names(), ","); got != "cuda,cpu" {
		t.Errorf("default backends %q, want cuda,cpu (auto tries cuda)", got)
	}
	if _, err := r.ForRun("gpu"); err == nil || err.Error() != `--backend: must be cuda, cpu or auto (got "gpu")` {
		t.Errorf("unknown backend: %v", err)
	}
	b, err := r.ForCheck(Auto)
	if err != nil || b.Name != "cpu" {
		t.Errorf("check with auto: %q, %v; want the CPU reference", b.Name, err)
	}
	if opts := b.Check(""); opts.NewCompute == nil || opts.NewComms == nil {
		t.Errorf("cpu check options %+v", opts)
	}
	if _, err := r.ForCheck("nope"); err == nil || !strings.Contains(err.Error(), "must be cuda, cpu or auto") {
		t.Errorf("check, unknown backend: %v", err)
	}
}

// The CPU backend runs fp16 configs as fp32 and says so; the Plan is built
// from the adapted config. A model beyond 8 GiB per rank is refused.
func TestPrepareCPU(t *testing.T) {
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.DType = "fp16"
	plan, notes, err := Prepare(CPU(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Config.Model.DType != "fp32" || len(notes) != 1 || !strings.Contains(notes[0], "config's fp16 is run (and modeled) as fp32") {
		t.Errorf("dtype %s, notes %q", plan.Config.Model.DType, notes)
	}
	rank, err := CPU().New(launch.Env{})
	if err != nil || rank.NewCompute == nil || rank.NewComm == nil {
		t.Fatalf("cpu constructors: %+v, %v", rank, err)
	}
	c, err := rank.NewCompute(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.AllocatedBytes() <= 0 {
		t.Errorf("cpu compute allocated %d", c.AllocatedBytes())
	}

	// The seed's 70B-class model at tp8 × pp2 holds tens of GB per rank.
	big, err := configs.Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Prepare(CPU(), big); err == nil || !strings.Contains(err.Error(), "--backend cpu: rank 0 would hold") {
		t.Errorf("seed model on the CPU: %v", err)
	}
	// The refusal reconciles with the dry run: the seed is fp16, the CPU
	// backend holds float32, and the dry run's figure is named beside it.
	if big, err = configs.Load("tp8pp2"); err != nil || big.Model.DType != "fp16" {
		t.Fatalf("seed dtype %q: %v", big.Model.DType, err)
	}
	plan16, err := partition.NewPlan(big)
	if err != nil {
		t.Fatal(err)
	}
	var worst int64
	for _, r := range plan16.Ranks {
		worst = max(worst, r.Memory.TotalBytes)
	}
	dry := fmt.Sprintf("%.1f GB for its largest rank", float64(worst)/1e9)
	if _, _, err := Prepare(CPU(), big); err == nil || !strings.Contains(err.Error(), "as fp32, 4 bytes each") || !strings.Contains(err.Error(), "fp16, 2 bytes each: "+dry) {
		t.Errorf("refusal does not reconcile with the dry run (%s): %v", dry, err)
	}
}

// A GPU run is modeled with exec/cuda's own host costs unless the config
// names a runtime or a calibration replaced the hardware.
func TestPrepareCUDARuntime(t *testing.T) {
	want, err := configs.LoadRuntime(CUDARuntime)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runtime.Set() || cfg.Hardware.Preset == "" || cfg.Hardware.GPU.StepOverheadS == want.StepOverheadS {
		t.Fatalf("fixture: runtime %q, preset %q, step overhead %g: the test needs a preset whose host cost differs from %s's %g",
			cfg.Runtime.Name, cfg.Hardware.Preset, cfg.Hardware.GPU.StepOverheadS, CUDARuntime, want.StepOverheadS)
	}
	plan, notes, err := Prepare(CUDA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := plan.Config.Hardware.GPU
	if plan.Config.Runtime.Preset != CUDARuntime || g.StepOverheadS != want.StepOverheadS || g.CUDAGraphs != want.CUDAGraphs {
		t.Errorf("runtime %q, step overhead %g, graphs %t; want %s's %g, %t", plan.Config.Runtime.Preset, g.StepOverheadS, g.CUDAGraphs, CUDARuntime, want.StepOverheadS, want.CUDAGraphs)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "modeled with the "+CUDARuntime+" runtime profile") {
		t.Errorf("notes %q", notes)
	}

	// A config's own runtime stays.
	own, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	vllm, err := configs.LoadRuntime("vllm")
	if err != nil {
		t.Fatal(err)
	}
	if err := own.SetRuntime(vllm); err != nil {
		t.Fatal(err)
	}
	if plan, notes, err = Prepare(CUDA(), own); err != nil || plan.Config.Runtime.Preset != "vllm" || len(notes) != 0 {
		t.Errorf("config with [runtime] vllm: runtime %q, notes %q, %v", plan.Config.Runtime.Preset, notes, err)
	}

	// A calibrated config (no hardware preset) keeps the measured host costs.
	cal, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cal.Hardware.Preset = ""
	cal.Hardware.GPU.StepOverheadS = 1.25e-4
	if plan, notes, err = Prepare(CUDA(), cal); err != nil || plan.Config.Runtime.Set() || plan.Config.Hardware.GPU.StepOverheadS != 1.25e-4 || len(notes) != 0 {
		t.Errorf("calibrated config: runtime %q, step overhead %g, notes %q, %v", plan.Config.Runtime.Preset, plan.Config.Hardware.GPU.StepOverheadS, notes, err)
	}
}

// A calibration measured on another backend than the run's is named in
// the run's notes; one from the same backend is not.
func TestPrepareNamesAnotherBackendsCalibration(t *testing.T) {
	for _, tc := range []struct {
		calibrated string
		want       bool
	}{{"cuda", true}, {"cpu", false}, {"", false}} {
		cfg, err := configs.Load("test/single-tiny")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Hardware.CalibratedBackend = tc.calibrated
		_, notes, err := Prepare(CPU(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, n := range notes {
			got = got || strings.Contains(n, "the calibration was measured on the cuda backend and this run is on cpu")
		}
		if got != tc.want {
			t.Errorf("calibrated on %q: notes %q", tc.calibrated, notes)
		}
	}
}
