//go:build cgo

package cuda

import (
	"math"
	"testing"
)

// Tests named RealGPU run on a machine with a GPU (scripts/gpu-check.sh runs
// them from a test binary) and skip elsewhere.

func realDriver(t *testing.T) (*Driver, *Context) {
	t.Helper()
	d, err := Load()
	if err != nil {
		t.Skipf("no CUDA driver: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	n, err := d.DeviceCount()
	if err != nil || n == 0 {
		t.Skipf("no CUDA device: %d devices, %v", n, err)
	}
	return d, pinned(t, d)
}

const realKernel = `extern "C" __global__ void fill(unsigned int* p, unsigned int v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] = v + i;
}`

// The driver, NVRTC and a graph on a real device: compile, launch, capture,
// replay, read back.
func TestRealGPUKernelAndGraph(t *testing.T) {
	d, ctx := realDriver(t)
	info, err := ctx.Device().Info()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", info)
	rtc, err := LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	out, err := rtc.Compile(realKernel, "fill.cu", ArchOption(info.ComputeMajor, info.ComputeMinor, rtc.HasCUBIN()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.LoadModule(out.Image)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unload()
	f, err := m.Function("fill")
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const n = 1000
	p, err := d.MemAlloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.MemFree(p)
	check := func(v uint32) {
		t.Helper()
		got := make([]uint32, n)
		if err := s.CopyDtoHAsync(Bytes(got), p); err != nil {
			t.Fatal(err)
		}
		for i, x := range got {
			if x != v+uint32(i) {
				t.Fatalf("element %d = %d, want %d", i, x, v+uint32(i))
			}
		}
	}
	start, _ := d.NewEvent(EventDefault)
	end, _ := d.NewEvent(EventDefault)
	start.Record(s)
	if err := f.Launch(D1((n+255)/256), D1(256), 0, s, Ptr(p), U32(7), I32(n)); err != nil {
		t.Fatal(err)
	}
	end.Record(s)
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check(7)
	if ms, err := ElapsedMS(start, end); err != nil || ms < 0 {
		t.Errorf("ElapsedMS = %v, %v", ms, err)
	}
	if !d.HasGraphs() {
		t.Skip("driver without graphs")
	}
	if err := s.BeginCapture(CaptureThreadLocal); err != nil {
		t.Fatal(err)
	}
	if err := f.Launch(D1((n+255)/256), D1(256), 0, s, Ptr(p), U32(100), I32(n)); err != nil {
		t.Fatal(err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	e, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	g.Destroy()
	defer e.Destroy()
	check(7) // nothing ran during the capture
	if err := e.Launch(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check(100)
}

// RowMajorGemm on a real cuBLAS, fp32 and fp16, against the host product.
func TestRealGPUGemm(t *testing.T) {
	d, _ := realDriver(t)
	b, err := LoadCUBLAS()
	if err != nil {
		t.Skipf("no cuBLAS: %v", err)
	}
	h, err := b.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Destroy()
	s, _ := d.NewStream(StreamNonBlocking)
	defer s.Destroy()
	if err := h.SetStream(s); err != nil {
		t.Fatal(err)
	}
	const m, n, k = 3, 5, 4
	a, bm := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range bm {
		bm[i] = float32(i%5) - 2
	}
	want := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for p := 0; p < k; p++ {
				want[i*n+j] += a[i*k+p] * bm[p*n+j]
			}
		}
	}
	pa, _ := d.MemAlloc(4 * m * k)
	pb, _ := d.MemAlloc(4 * k * n)
	pc, _ := d.MemAlloc(4 * m * n)
	for _, p := range []DevicePtr{pa, pb, pc} {
		defer d.MemFree(p)
	}
	s.CopyHtoDAsync(pa, Bytes(a))
	s.CopyHtoDAsync(pb, Bytes(bm))
	if err := h.GemmEx(RowMajorGemm(m, n, k, pa, pb, pc, R32F)); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, m*n)
	if err := s.CopyDtoHAsync(Bytes(got), pc); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-5 {
			t.Fatalf("C = %v, want %v", got, want)
		}
	}
}
