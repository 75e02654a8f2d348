package backend

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
)

// fakeCalibrator is a Calibrator whose methods are never called here: the
// registry only hands it over.
type fakeCalibrator struct {
	Calibrator
	o CalibratorOptions
}

// The calibration's device parts are reached by naming the backend: the
// options and env are handed to the backend's part as given, its own
// errors come back (a calibrator's as they are, an untimed Compute's under
// the flag), and a backend without the part is refused, naming those that
// have it.
func TestCalibrationPartsThroughTheRegistry(t *testing.T) {
	gpu := fake("gpu", true, nil)
	gpu.Calibrator = func(o CalibratorOptions) (Calibrator, error) { return &fakeCalibrator{o: o}, nil }
	var untimedOn int
	gpu.Untimed = func(env launch.Env) (NewComputeFunc, error) {
		untimedOn = env.LocalRank
		return func(*partition.Plan, int) (exec.Compute, error) { return nil, nil }, nil
	}
	noDriver := errors.New("cuda: no CUDA driver: libcuda.so.1 not found")
	broken := fake("broken", false, nil)
	broken.Calibrator = func(CalibratorOptions) (Calibrator, error) { return nil, noDriver }
	broken.Untimed = func(launch.Env) (NewComputeFunc, error) { return nil, noDriver }
	host := fake("host", false, nil)
	r := &Registry{}
	for _, b := range []Backend{gpu, broken, host} {
		if err := r.Register(b); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		name, backend, want string
		untimed             bool
	}{
		{"no calibrator", "host", "backend host has no device calibrator (backends with one: gpu, broken)", false},
		{"calibrator fails", "broken", "cuda: no CUDA driver: libcuda.so.1 not found", false},
		{"unknown for calibrator", "tpu", `--backend: must be gpu, broken, host or auto (got "tpu")`, false},
		{"no untimed", "host", "backend host has no untimed Compute (backends with one: gpu, broken)", true},
		{"untimed fails", "broken", "--backend broken: cuda: no CUDA driver: libcuda.so.1 not found", true},
		{"unknown for untimed", "auto", `--backend: must be gpu, broken, host or auto (got "auto")`, true},
	} {
		var err error
		if c.untimed {
			_, err = r.UntimedCompute(c.backend, launch.Env{})
		} else {
			_, err = r.Calibrator(c.backend, CalibratorOptions{})
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if c.backend == "broken" && !errors.Is(err, noDriver) {
			t.Errorf("%s: %v does not wrap the backend's error", c.name, err)
		}
	}

	cal, err := r.Calibrator("gpu", CalibratorOptions{Device: 3, Warmup: 5})
	if err != nil {
		t.Fatal(err)
	}
	if fc, ok := cal.(*fakeCalibrator); !ok || fc.o.Device != 3 || fc.o.Warmup != 5 {
		t.Errorf("gpu's calibrator %+v, want the fake opened with device 3, warmup 5", cal)
	}
	if nc, err := r.UntimedCompute("gpu", launch.Env{LocalRank: 2}); err != nil || nc == nil || untimedOn != 2 {
		t.Errorf("gpu's untimed Compute: err %v, constructor %v, on GPU %d (want 2)", err, nc != nil, untimedOn)
	}
}

// The default registry: the GPU backend has the calibration's device parts,
// the CPU backend has neither and is refused by name; without a driver the
// GPU backend's parts name the driver searched for.
func TestDefaultCalibrationParts(t *testing.T) {
	r := Default()
	if _, err := r.Calibrator("cpu", CalibratorOptions{}); err == nil || err.Error() != "backend cpu has no device calibrator (backends with one: cuda)" {
		t.Errorf("cpu calibrator: %v", err)
	}
	if _, err := r.UntimedCompute("cpu", launch.Env{}); err == nil || err.Error() != "backend cpu has no untimed Compute (backends with one: cuda)" {
		t.Errorf("cpu untimed Compute: %v", err)
	}

	t.Setenv("PARTBENCH_CUDA_LIB", filepath.Join(t.TempDir(), "libcuda.so.1"))
	if r.Available("cuda") == nil {
		t.Skip("a CUDA driver is loaded in this process despite PARTBENCH_CUDA_LIB")
	}
	if c, err := r.Calibrator("cuda", CalibratorOptions{}); err == nil || c != nil || !strings.HasPrefix(err.Error(), "cuda: no CUDA driver: ") {
		t.Errorf("cuda calibrator without a driver: %v, %v (want no calibrator, and the driver named)", c, err)
	}
	if _, err := r.UntimedCompute("cuda", launch.Env{}); err == nil ||
		!strings.HasPrefix(err.Error(), "--backend cuda: the GPU backend needs the CUDA driver and a GPU: ") {
		t.Errorf("cuda untimed Compute without a driver: %v", err)
	}
}
