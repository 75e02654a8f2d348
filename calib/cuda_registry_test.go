package calib

import (
	"context"
	"testing"

	"github.com/partbench/partbench/exec/backend"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/launch"
)

// The op-time table holds the GPU before each timed op through the
// Compute's stream, found by a type assertion (deviceStream) now that calib
// no longer names exec/cuda's Compute: this test file (test files may import
// a backend) keeps the GPU backend's Compute inside that interface, so a
// change to its Stream method fails the build instead of silently timing
// the table without a hold.
var _ deviceStream = (*pcuda.Compute)(nil)

// The GPU calibration takes its device calibrator from the registry calib
// is given, by the GPU backend's name: a registry whose "cuda" has no
// calibrator refuses it with the registry's error, naming the backends that
// have one (none here), before any driver is looked for.
func TestCUDACalibrationThroughTheRegistry(t *testing.T) {
	saved := Registry
	t.Cleanup(func() { Registry = saved })
	Registry = func() *backend.Registry {
		r := &backend.Registry{}
		if err := r.Register(backend.Backend{Name: "cuda", New: func(launch.Env) (backend.Rank, error) { return backend.Rank{}, nil }}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	_, err := Run(context.Background(), Options{Backend: "cuda", Configs: []string{"test/single-tiny"}, OpConfigs: []string{"test/single-tiny"}})
	if want := "backend cuda has no device calibrator (backends with one: none)"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
