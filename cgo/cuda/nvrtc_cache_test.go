//go:build cgo

package cuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realNVRTC loads the machine's NVRTC (scripts/install-test-deps.sh puts
// Debian's in the cache folder), skipping when there is none unless
// PARTBENCH_REQUIRE_NVRTC=1.
func realNVRTC(t *testing.T) *NVRTC {
	t.Helper()
	n, err := LoadNVRTC()
	if err != nil {
		if os.Getenv("PARTBENCH_REQUIRE_NVRTC") == "1" {
			t.Fatalf("PARTBENCH_REQUIRE_NVRTC=1 and no NVRTC: %v", err)
		}
		t.Skipf("no NVRTC (scripts/install-test-deps.sh fetches one): %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// A real NVRTC compiles to a cubin and PTX with libnvrtc-builtins found
// beside libnvrtc, not on LD_LIBRARY_PATH: without the preload the first
// compilation fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE.
func TestRealNVRTCCompilesWithBuiltinsBesideIt(t *testing.T) {
	t.Setenv("LD_LIBRARY_PATH", "") // read by Find; the process's loader path is fixed at start
	n := realNVRTC(t)
	major, minor, err := n.Version()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NVRTC %d.%d from %s", major, minor, n.Path())
	dir := filepath.Dir(n.Path())
	if m, _ := filepath.Glob(filepath.Join(dir, "libnvrtc-builtins.so.*.*")); len(m) > 0 && len(n.builtins) == 0 {
		t.Errorf("%s holds %v but no builtins were loaded", dir, m)
	}
	src := `extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 2.0f * x[threadIdx.x]; }`
	out, err := n.Compile(src, "k.cu", ArchOption(8, 0, false))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out.Image), ".visible .entry k(") {
		t.Errorf("PTX lacks the entry k:\n%s", out.Image)
	}
	if n.HasCUBIN() {
		out, err := n.Compile(src, "k.cu", ArchOption(8, 0, true))
		if err != nil {
			t.Fatal(err)
		}
		// A cubin is an ELF file.
		if !out.CUBIN || !strings.HasPrefix(string(out.Image), "\x7fELF") {
			t.Errorf("cubin %v, image starts %q", out.CUBIN, out.Image[:min(4, len(out.Image))])
		}
		// The PTX comes with the cubin; sm_90a needs NVRTC 12.
		if !strings.Contains(string(out.PTX), ".target sm_80") {
			t.Errorf("no sm_80 PTX beside the cubin:\n%.300s", out.PTX)
		}
		if major >= 12 {
			out, err := n.Compile(src, "k.cu", ArchSpecificOption(9, 0, true))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out.PTX), ".target sm_90a") {
				t.Errorf("no sm_90a PTX:\n%.300s", out.PTX)
			}
		}
	}
}
