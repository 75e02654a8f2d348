//go:build cgo

package cuda

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
)

func fakeCalibrator(t *testing.T) *Calibrator {
	t.Helper()
	cudatest.Build(t).Setenv(t)
	c, err := NewCalibrator(CalibrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// calCounters is the fake driver's counters.
func calCounters(t *testing.T, c *Calibrator) map[string]int {
	t.Helper()
	m, err := cudatest.Counters(c.drv.ErrorName(cuda.Result(cudatest.Trace)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The fake's clock puts every event record 0.25 ms after the last, so a
// sample of any number of calls lasts 0.25 ms: the probing sample of one
// call gives 0.25 ms per call, and a minimum of 1 ms asks for
// ⌈1 / 0.25⌉ = 4 calls per sample, each then 0.25 / 4 = 62.5 µs.
func TestCalibratorOnFakes(t *testing.T) {
	c := fakeCalibrator(t)
	if c.Info().Name != "Fake H100 0" || !strings.Contains(c.Describe(), "Fake H100 0") {
		t.Errorf("device %q, describe %q", c.Info().Name, c.Describe())
	}
	const per = 0.25e-3 / 4
	for _, dt := range []string{"fp16", "bf16", "fp32"} {
		ts, err := c.GEMM(dt, 3, 5, 7, 1e-3, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 2 || ts[0] != per || ts[1] != per {
			t.Errorf("%s GEMM times %v, want two of %g", dt, ts, per)
		}
	}
	if _, err := c.GEMM("fp8", 1, 1, 1, 1e-3, 1); err == nil || !strings.Contains(err.Error(), "fp8") {
		t.Errorf("fp8 GEMM: %v", err)
	}

	// Reads of 1 MiB: 256 passes per call (256 MiB ÷ 1 MiB); the probe is
	// 2 warm-up launches + 1, each of 2 repeats 2 + 4: 15 launches.
	before := calCounters(t, c)["launches"]
	bw, err := c.Read(1<<20, 1e-3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := calCounters(t, c)["launches"] - before; got != 15 {
		t.Errorf("%d read launches, want 15", got)
	}
	if want := float64(1<<20) * 256 / per; bw[0] != want || bw[1] != want {
		t.Errorf("read bandwidth %v, want %g", bw, want)
	}
	// Copies count the read and the write: 2 × 1 MiB per call.
	cp, err := c.Copy(1<<20, 1e-3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * float64(1<<20) / per; len(cp) != 1 || cp[0] != want {
		t.Errorf("copy bandwidth %v, want %g", cp, want)
	}

	// 10 launches per sample, 3 samples: 3 × (2 + 10) = 36 launches, each
	// kernel 0.25 ms / 10 = 25 µs.
	before = calCounters(t, c)["launches"]
	dev, host, err := c.Launch(10, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := calCounters(t, c)["launches"] - before; got != 36 {
		t.Errorf("%d empty launches, want 36", got)
	}
	if len(dev) != 3 || dev[0] != 0.25e-3/10 || len(host) != 3 || !(host[0] >= 0) {
		t.Errorf("launch device %v, host %v", dev, host)
	}

	// A graph of 5 kernels, 4 launches per sample, 2 samples: 5 kernels
	// captured, 2 × (2 + 4) = 12 graph launches; a kernel inside the graph
	// 0.25 ms / 4 / 5 = 12.5 µs.
	before0 := calCounters(t, c)
	ks, ls, err := c.GraphLaunch(5, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	after := calCounters(t, c)
	if after["captured"]-before0["captured"] != 5 || after["graphLaunches"]-before0["graphLaunches"] != 12 {
		t.Errorf("captured %d, graph launches %d; want 5, 12", after["captured"]-before0["captured"], after["graphLaunches"]-before0["graphLaunches"])
	}
	if len(ks) != 2 || ks[0] != 0.25e-3/4/5 || len(ls) != 2 {
		t.Errorf("graph kernel %v, launch %v", ks, ls)
	}
	// A hold is one launch on the stream given, none for no time.
	before = calCounters(t, c)["launches"]
	if err := c.Hold(c.Stream(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(c.Stream(), 0); err != nil {
		t.Fatal(err)
	}
	if got := calCounters(t, c)["launches"] - before; got != 1 {
		t.Errorf("%d hold launches, want 1", got)
	}
	if free, total, err := c.MemInfo(); err != nil || total <= 0 || free > total {
		t.Errorf("mem info %d free of %d: %v", free, total, err)
	}
}

// Bad sizes are refused by name, never launched.
func TestCalibratorRefusesBadSizes(t *testing.T) {
	c := fakeCalibrator(t)
	if _, err := c.GEMM("fp16", 0, 5, 7, 1e-3, 1); err == nil || !strings.Contains(err.Error(), "0×5×7") {
		t.Errorf("GEMM of M 0: %v", err)
	}
	if _, _, err := c.Sample(0, func() error { return nil }); err == nil {
		t.Error("a sample of 0 calls accepted")
	}
	if _, _, err := c.GraphLaunch(0, 1, 1); err == nil {
		t.Error("a graph of 0 kernels accepted")
	}
}

// The sizes the calibration derives, by hand.
func TestCalibrationSizes(t *testing.T) {
	for _, c := range []struct {
		bytes int64
		want  int
	}{
		{1 << 20, 256},     // 256 MiB / 1 MiB
		{3 << 20, 86},      // ⌈256 / 3⌉
		{256 << 20, 1},     // one pass
		{1 << 30, 1},       // beyond 256 MiB: still one
		{128, 2097152 / 2}, // 2^28 / 2^7 = 2^21, capped at 2^20
	} {
		if got := CalReadPasses(c.bytes); got != c.want {
			t.Errorf("CalReadPasses(%d) = %d, want %d", c.bytes, got, c.want)
		}
	}
	for _, c := range []struct {
		minS, oneS float64
		want       int
	}{
		{1e-3, 0.25e-3, 4}, {1e-3, 0.3e-3, 4}, {1e-3, 2e-3, 1}, {1, 1e-6, 10000}, {1e-3, 0, 10000},
	} {
		if got := CalibrationCalls(c.minS, c.oneS); got != c.want {
			t.Errorf("CalibrationCalls(%g, %g) = %d, want %d", c.minS, c.oneS, got, c.want)
		}
	}
}

// Without a driver the calibrator names it as New does.
func TestCalibratorWithoutDriver(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", filepath.Join(t.TempDir(), "libcuda.so.1"))
	_, err := NewCalibrator(CalibrateOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "cuda: no CUDA driver: ") || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Errorf("err = %v, want it to name the missing libcuda.so.1", err)
	}
}

// calibrate.cu compiles with NVRTC for sm_80 and sm_90 into PTX with both
// entries, with the parameter lists Read and Launch pass.
func TestCalibrateSourceCompiles(t *testing.T) {
	rtc := flashNVRTC(t)
	for _, arch := range []int{80, 90} {
		out, err := rtc.Compile(calibrateSource, "partbench_calibrate.cu", cuda.ArchOption(arch/10, arch%10, false))
		if err != nil {
			t.Fatalf("sm_%d: %v", arch, err)
		}
		ptx := string(out.Image)
		for _, want := range []string{".entry pb_cal_read(", ".param .u64 pb_cal_read_param_0", ".param .u64 pb_cal_read_param_1",
			".param .u32 pb_cal_read_param_2", ".param .u64 pb_cal_read_param_3", ".entry pb_cal_empty(", "ld.global.cg",
			".entry pb_cal_hold(", ".param .u64 pb_cal_hold_param_0", "%globaltimer"} {
			if !strings.Contains(ptx, want) {
				t.Errorf("sm_%d: PTX lacks %q", arch, want)
			}
		}
	}
}
