package cuda

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/dl"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func tinyPlan(t *testing.T, name string) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// Where the driver is missing, New fails at once with "no CUDA driver" and
// every place dl searched.
func TestNewWithoutDriver(t *testing.T) {
	plan := tinyPlan(t, "test/single-tiny")
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	t.Setenv("PARTBENCH_CUDA_LIB", missing)
	_, err := New(plan, 0, Options{DType: "fp16"})
	if err == nil {
		t.Fatal("New succeeded without a driver")
	}
	if errors.Is(err, dl.ErrNoCgo) {
		if want := "cuda: no CUDA driver: built without cgo"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("err = %v, want it to start with %q", err, want)
		}
		return
	}
	msg := err.Error()
	for _, want := range []string{
		"cuda: no CUDA driver: dl: CUDA driver (libcuda.so.1) not found; searched, in order:",
		"$PARTBENCH_CUDA_LIB " + missing + ": ",
		"set PARTBENCH_CUDA_LIB=/path/to/libcuda.so.1",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if !errors.Is(err, dl.ErrNotFound) {
		t.Errorf("err does not wrap dl.ErrNotFound: %v", err)
	}
}

// The machine's own search, as a user without overrides meets it.
func TestNewWithoutDriverDefaultSearch(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", "")
	if d, err := cuda.Load(); err == nil {
		d.Close()
		t.Skipf("this machine has a CUDA driver (%s)", d.Path())
	}
	_, err := New(tinyPlan(t, "test/single-tiny"), 0, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "cuda: no ") {
		t.Fatalf("err = %v", err)
	}
	if errors.Is(err, dl.ErrNoCgo) {
		return
	}
	for _, want := range []string{"LD_LIBRARY_PATH", "system loader libcuda.so.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q:\n%v", want, err)
		}
	}
}

func TestNewRejectsBadArguments(t *testing.T) {
	plan := tinyPlan(t, "test/single-tiny")
	if _, err := New(plan, 1, Options{}); err == nil || !strings.Contains(err.Error(), "rank 1 outside") {
		t.Errorf("rank 1 of 1: err = %v", err)
	}
	if _, err := New(plan, 0, Options{DType: "fp8"}); err == nil || !strings.Contains(err.Error(), `dtype "fp8" is not supported`) {
		t.Errorf("fp8: err = %v", err)
	}
}
