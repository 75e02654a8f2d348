//go:build cgo

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/cgo/dl"
)

func loadNVRTC(t *testing.T, defines ...string) (*NVRTC, cudatest.Libs) {
	t.Helper()
	libs := cudatest.Build(t, defines...)
	lib, err := dl.Open(libs.NVRTC, dl.Now|dl.Local)
	if err != nil {
		t.Fatal(err)
	}
	n, err := LoadNVRTCFrom(lib)
	if err != nil {
		lib.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, libs
}

func TestArchOption(t *testing.T) {
	if got := ArchOption(9, 0, false); got != "--gpu-architecture=compute_90" {
		t.Errorf("virtual: %q", got)
	}
	if got := ArchOption(10, 0, true); got != "--gpu-architecture=sm_100" {
		t.Errorf("real: %q", got)
	}
	if got := ArchSpecificOption(9, 0, true); got != "--gpu-architecture=sm_90a" {
		t.Errorf("arch-specific real: %q", got)
	}
	if got := ArchSpecificOption(9, 0, false); got != "--gpu-architecture=compute_90a" {
		t.Errorf("arch-specific virtual: %q", got)
	}
}

func TestCompilePTXAndCUBIN(t *testing.T) {
	n, _ := loadNVRTC(t)
	src := `extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1; }`
	out, err := n.Compile(src, "k.cu", ArchOption(9, 0, false), "-DPB_F16")
	if err != nil {
		t.Fatal(err)
	}
	if want := "FAKE PTX k.cu opts: --gpu-architecture=compute_90 -DPB_F16\x00"; string(out.Image) != want || out.CUBIN {
		t.Errorf("PTX = %q (cubin %v), want %q", out.Image, out.CUBIN, want)
	}
	out, err = n.Compile(src, "k.cu", ArchOption(9, 0, true))
	if err != nil {
		t.Fatal(err)
	}
	if !out.CUBIN || !strings.HasPrefix(string(out.Image), "FAKE CUBIN k.cu opts: --gpu-architecture=sm_90") {
		t.Errorf("CUBIN = %q (cubin %v)", out.Image, out.CUBIN)
	}
}

func TestCompileErrorCarriesLog(t *testing.T) {
	n, _ := loadNVRTC(t)
	_, err := n.Compile("#error nope\n", "bad.cu", ArchOption(9, 0, false))
	if !errors.Is(err, NVRTCCompilation) {
		t.Fatalf("err = %v, want NVRTCCompilation", err)
	}
	for _, want := range []string{
		"nvrtc: nvrtcCompileProgram(bad.cu, --gpu-architecture=compute_90): NVRTC_ERROR_COMPILATION (6)",
		"(nvrtcGetErrorString: NVRTC_ERROR_COMPILATION)",
		"compiler log:\nbad.cu(1): error: #error directive: fake failure",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := n.Compile("x", "opt.cu", "nodash"); !errors.Is(err, NVRTCInvalidOption) {
		t.Errorf("bad option: err = %v", err)
	}
}

func TestCompileCUBINNeedsNewNVRTC(t *testing.T) {
	n, _ := loadNVRTC(t, "FAKE_OLD")
	if n.HasCUBIN() {
		t.Error("HasCUBIN without nvrtcGetCUBIN")
	}
	if _, err := n.Compile("x", "k.cu", ArchOption(9, 0, true)); err == nil || !strings.Contains(err.Error(), "nvrtcGetCUBIN") {
		t.Errorf("err = %v", err)
	}
	if _, err := n.Compile("x", "k.cu", ArchOption(9, 0, false)); err != nil {
		t.Errorf("PTX on old NVRTC: %v", err)
	}
}

// The module loader accepts what the compiler produced (PTX with its NUL).
func TestCompiledImageLoads(t *testing.T) {
	n, libs := loadNVRTC(t)
	out, err := n.Compile("x", "k.cu", ArchOption(9, 0, false))
	if err != nil {
		t.Fatal(err)
	}
	lib, err := dl.Open(libs.Driver, dl.Now|dl.Local)
	if err != nil {
		t.Fatal(err)
	}
	d, err := LoadFrom(lib)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() }) // after pinned's cleanup releases the context
	pinned(t, d)
	m, err := d.LoadModule(out.Image)
	if err != nil {
		t.Fatal(err)
	}
	m.Unload()
	if got := trace(d); got != "cuModuleLoadData(FAKE PTX k.cu opts: --gpu-architecture=compute_90)" {
		t.Errorf("fake saw %q", got)
	}
}
