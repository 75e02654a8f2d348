//go:build cgo

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/cgo/dl"
)

func TestLoadWithOverrides(t *testing.T) {
	libs := cudatest.Build(t)
	libs.Setenv(t)
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path() != libs.Driver {
		t.Errorf("driver loaded from %s, want %s", d.Path(), libs.Driver)
	}
	// 13000 = 1000·13 + 10·0 (cuDriverGetVersion's encoding).
	if d.Version() != 13000 || d.VersionString() != "13.0" {
		t.Errorf("version %d %q, want 13000 \"13.0\"", d.Version(), d.VersionString())
	}
	b, err := LoadCUBLAS()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Path() != libs.CUBLAS {
		t.Errorf("cublas loaded from %s, want %s", b.Path(), libs.CUBLAS)
	}
	n, err := LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if major, minor, err := n.Version(); major != 13 || minor != 0 || err != nil {
		t.Errorf("nvrtc version %d.%d, %v", major, minor, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A wrong override is the only place searched, and every loader says so.
func TestLoadNotFound(t *testing.T) {
	missing := t.TempDir() + "/nothere.so"
	cases := []struct {
		env, name string
		load      func() error
	}{
		{"PARTBENCH_CUDA_LIB", "CUDA driver", func() error { _, err := Load(); return err }},
		{"PARTBENCH_CUBLAS_LIB", "cuBLAS", func() error { _, err := LoadCUBLAS(); return err }},
		{"PARTBENCH_NVRTC_LIB", "NVRTC", func() error { _, err := LoadNVRTC(); return err }},
	}
	for _, c := range cases {
		t.Setenv(c.env, missing)
		err := c.load()
		if !errors.Is(err, dl.ErrNotFound) {
			t.Errorf("%s: err = %v, want dl.ErrNotFound", c.name, err)
			continue
		}
		for _, want := range []string{c.name, "$" + c.env + " " + missing, "set " + c.env + "="} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error does not say %q:\n%v", c.name, want, err)
			}
		}
	}
}

func TestLoadMissingMandatorySymbol(t *testing.T) {
	libs := cudatest.Build(t, "FAKE_NO_ALLOC", "FAKE_OLD")
	lib, err := dl.Open(libs.Driver, dl.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	_, err = LoadFrom(lib)
	if err == nil {
		t.Fatal("LoadFrom accepted a driver without cuMemAlloc_v2")
	}
	if !strings.Contains(err.Error(), "cuMemAlloc_v2") || !strings.Contains(err.Error(), libs.Driver) {
		t.Errorf("error %q does not name cuMemAlloc_v2 and the library", err)
	}
	// Optional symbols (graphs, cuEventElapsedTime_v2) are not reported.
	for _, opt := range []string{"cuGraph", "cuStreamBeginCapture", "_v2, cuEventElapsedTime_v2"} {
		if strings.Contains(err.Error(), opt) {
			t.Errorf("error %q names optional %s", err, opt)
		}
	}
}

func TestInitFailureCarriesDriverText(t *testing.T) {
	libs := cudatest.Build(t, "FAKE_NO_DEVICE")
	lib, err := dl.Open(libs.Driver, dl.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	_, err = LoadFrom(lib)
	want := "cuda: cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is visible " +
		"(cuGetErrorString: fake: no CUDA-capable device is detected)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
	var r Result
	if !errors.Is(err, ErrNoDevice) || !errors.As(err, &r) || r != ErrNoDevice {
		t.Errorf("err does not wrap ErrNoDevice: %v", err)
	}
}

func TestOtherLibrariesMissingSymbols(t *testing.T) {
	libs := cudatest.Build(t)
	// The driver is not cuBLAS: binding it as cuBLAS or NVRTC names what is missing.
	for _, c := range []struct {
		bind func(*dl.Library) error
		want string
	}{
		{func(l *dl.Library) error { _, err := LoadCUBLASFrom(l); return err }, "cublasGemmEx"},
		{func(l *dl.Library) error { _, err := LoadNVRTCFrom(l); return err }, "nvrtcCompileProgram"},
	} {
		lib, err := dl.Open(libs.Driver, dl.Now)
		if err != nil {
			t.Fatal(err)
		}
		err = c.bind(lib)
		lib.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want it to name %s", err, c.want)
		}
	}
}
