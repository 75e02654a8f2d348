//go:build cgo

package cuda

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestDevicesAndInfo(t *testing.T) {
	d, _ := loadFake(t)
	if n, err := d.DeviceCount(); n != 2 || err != nil {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	if _, err := d.Device(2); err == nil || !strings.Contains(err.Error(), "device 2 does not exist (2 visible)") {
		t.Errorf("Device(2): err = %v", err)
	}
	dev, err := d.Device(1)
	if err != nil {
		t.Fatal(err)
	}
	// The fake's handle is ordinal + 10; it answers only for handles it gave out.
	info, err := dev.Info()
	if err != nil {
		t.Fatal(err)
	}
	want := DeviceInfo{Ordinal: 1, Name: "Fake H100 1", ComputeMajor: 9, ComputeMinor: 0, SMs: 132,
		TotalMemBytes: 80 << 30, L2Bytes: 50 << 20, MaxPersistingL2Bytes: 78643200,
		SharedPerBlockOptin: 232448, SharedPerSMBytes: 233472, MemoryBusWidthBits: 5120,
		DriverVersion: 13000, MaxThreadsPerBlock: 1024, WarpSize: 32, PCIBusID: 0x19}
	if info != want {
		t.Errorf("Info() = %+v\nwant     %+v", info, want)
	}
	if _, err := dev.Attribute(DeviceAttribute(4242)); !errors.Is(err, ErrInvalidValue) ||
		!strings.Contains(err.Error(), "cuDeviceGetAttribute(4242)") {
		t.Errorf("unknown attribute: err = %v", err)
	}
}

// Allocation needs the context current on the calling thread: the fake
// refuses otherwise, as the driver does, and the error carries the
// driver's text.
func TestMemoryNeedsPinnedContext(t *testing.T) {
	d, _ := loadFake(t)
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // a fresh thread with no context current
		defer runtime.UnlockOSThread()
		_, err := d.MemAlloc(64)
		done <- err
	}()
	err := <-done
	want := "cuda: cuMemAlloc_v2(64 bytes): CUDA_ERROR_INVALID_CONTEXT (201): no valid context is current on this thread " +
		"(cuGetErrorString: fake: invalid device context)"
	if err == nil || err.Error() != want {
		t.Errorf("MemAlloc without a context: err = %v\nwant %s", err, want)
	}

	ctx := pinned(t, d)
	if cur, err := ctx.Current(); !cur || err != nil {
		t.Errorf("Current() = %v, %v after Pin", cur, err)
	}
	if ctx.Handle() != 0xC0DE00 {
		t.Errorf("context handle %#x, want the fake's 0xc0de00", ctx.Handle())
	}
	p, err := d.MemAlloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	if got := trace(d); got != "cuMemAlloc_v2(bytes=1024)" {
		t.Errorf("fake saw %q", got)
	}
	if err := d.MemFree(p); err != nil {
		t.Error(err)
	}
	_, err = d.MemAlloc(2 << 40)
	if !errors.Is(err, ErrOutOfMemory) || !strings.HasSuffix(err.Error(), "(cuGetErrorString: fake: out of memory)") {
		t.Errorf("2 TiB: err = %v", err)
	}
	if _, err := d.MemAlloc(0); err == nil {
		t.Error("MemAlloc(0) accepted")
	}
	free, total, err := d.MemGetInfo()
	if free != 79<<30 || total != 80<<30 || err != nil {
		t.Errorf("MemGetInfo = %d, %d, %v", free, total, err)
	}
	if err := ctx.Release(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
}

func TestCopiesAndMemsets(t *testing.T) {
	d, _ := loadFake(t)
	pinned(t, d)
	p, err := d.MemAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer d.MemFree(p)
	src := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	if err := d.CopyHtoD(p, Bytes(src)); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 8)
	if err := d.CopyDtoH(Bytes(got), p); err != nil {
		t.Fatal(err)
	}
	if got[0] != 1 || got[7] != 8 {
		t.Errorf("round trip = %v", got)
	}
	s, err := d.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if got := trace(d); got != "cuStreamCreate(flags=1)" {
		t.Errorf("fake saw %q", got)
	}
	// Offsets: elements 4..7 of the 16 the buffer holds.
	q := p.Add(16)
	if err := s.CopyHtoDAsync(q, Bytes([]float32{9, 10, 11, 12})); err != nil {
		t.Fatal(err)
	}
	if err := s.MemsetD32Async(p, 0x3f800000, 2); err != nil { // two float32 ones
		t.Fatal(err)
	}
	if got := trace(d); got != "cuMemsetD32Async(v=1065353216, n=2)" {
		t.Errorf("fake saw %q", got)
	}
	if err := s.CopyDtoDAsync(p.Add(8), q, 8); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyDtoHAsync(Bytes(got), p); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 1, 9, 10, 9, 10, 11, 12}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("buffer = %v, want %v", got, want)
		}
	}
	if err := s.MemsetD8Async(p, 0, 64); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyDtoH(Bytes(got), p); err != nil || got[5] != 0 {
		t.Errorf("after memset: %v, %v", got, err)
	}
}

func TestEventsElapsed(t *testing.T) {
	for _, c := range []struct {
		defines []string
		call    string
	}{
		{nil, "cuEventElapsedTime_v2"},
		{[]string{"FAKE_OLD"}, "cuEventElapsedTime"}, // a driver before CUDA 12.8
	} {
		d, _ := loadFake(t, c.defines...)
		pinned(t, d)
		s, err := d.NewStream(StreamDefault)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := d.NewEvent(EventDefault)
		b, _ := d.NewEvent(EventDefault)
		if done, err := a.Done(); done || err != nil {
			t.Errorf("Done before any record = %v, %v; want false (CUDA_ERROR_NOT_READY)", done, err)
		}
		if _, err := ElapsedMS(a, b); !errors.Is(err, ErrInvalidHandle) || !strings.Contains(err.Error(), c.call+":") {
			t.Errorf("%v: elapsed before record: err = %v, want %s to fail", c.defines, err, c.call)
		}
		// The fake's clock advances 0.25 ms per record.
		for _, e := range []Event{a, b} {
			if err := e.Record(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if done, err := b.Done(); !done || err != nil {
			t.Errorf("Done after record = %v, %v", done, err)
		}
		ms, err := ElapsedMS(a, b)
		if ms != 0.25 || err != nil {
			t.Errorf("%v: ElapsedMS = %v, %v; want 0.25", c.defines, ms, err)
		}
		if got := trace(d); got != c.call {
			t.Errorf("%v: fake ran %q, want %q", c.defines, got, c.call)
		}
		a.Destroy()
		b.Destroy()
		s.Destroy()
	}
}
