//go:build cgo

package cuda

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
)

// The CU_MEMHOSTALLOC_* values of cuda.h.
func TestHostAllocFlagValues(t *testing.T) {
	for _, c := range []struct {
		got, want HostAllocFlags
		name      string
	}{{HostAllocPortable, 0x01, "PORTABLE"}, {HostAllocDeviceMap, 0x02, "DEVICEMAP"}, {HostAllocWriteCombined, 0x04, "WRITECOMBINED"}} {
		if c.got != c.want {
			t.Errorf("CU_MEMHOSTALLOC_%s = %#x, cuda.h says %#x", c.name, c.got, c.want)
		}
	}
	if unsafe.Sizeof(HostAllocFlags(0)) != 4 {
		t.Error("cuMemHostAlloc's Flags is an unsigned int (4 bytes)")
	}
}

func counters(t *testing.T, d *Driver) map[string]int {
	t.Helper()
	c, err := cudatest.Counters(d.ErrorName(Result(cudatest.Trace)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cuMemHostAlloc's arguments cross in order (the fake's trace), the
// memory is usable, and an async copy into it completes when the stream is
// synchronized, not before: the DMA a reader must wait for.
func TestPinnedAllocAndAsyncCopies(t *testing.T) {
	d, _ := loadFake(t)
	pinned(t, d)
	if _, err := d.MemHostAlloc(4096, HostAllocPortable); err != nil {
		t.Fatal(err)
	} else if tr := trace(d); tr != "cuMemHostAlloc(bytes=4096, flags=1)" {
		t.Errorf("trace %q", tr)
	}
	m, err := d.MemHostAlloc(64, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Bytes()); got != 64 || m.Len() != 64 {
		t.Fatalf("Bytes() of %d bytes, Len %d; want 64", got, m.Len())
	}
	st, err := d.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	dev, err := d.MemAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer d.MemFree(dev)
	src := bytes.Repeat([]byte{7}, 64)
	if err := d.CopyHtoD(dev, src); err != nil {
		t.Fatal(err)
	}
	host := m.Bytes()
	clear(host)
	if err := st.CopyDtoHAsync(host, dev); err != nil {
		t.Fatal(err)
	}
	if host[0] != 0 {
		t.Error("the device-to-host copy into pinned memory was done before the stream was synchronized")
	}
	if err := st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(host, src) {
		t.Errorf("after the synchronization pinned memory holds %v, want the device's %v", host[:4], src[:4])
	}
	// Host to device from pinned memory, then device to host into pageable
	// memory on the same stream: stream order puts the first copy first.
	for i := range host {
		host[i] = byte(i)
	}
	if err := st.CopyHtoDAsync(dev, host); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, 64)
	if err := st.CopyDtoHAsync(back, dev); err != nil {
		t.Fatal(err)
	}
	if err := st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, host) {
		t.Errorf("read back %v, want %v", back[:4], host[:4])
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if m.Bytes() != nil || m.Free() != nil {
		t.Error("a freed allocation still has bytes, or its second Free fails")
	}
	// Two allocations (4096 and 64 bytes), one freed.
	if c := counters(t, d); c["hostAllocs"] != 2 || c["hostFrees"] != 1 {
		t.Errorf("counters %v: want hostAllocs=2 hostFrees=1", c)
	}
}

// The driver refuses what the real one refuses: a free of a pointer it did
// not allocate, a zero size, unknown flags (refused before the call).
func TestPinnedRefusals(t *testing.T) {
	d, _ := loadFake(t)
	pinned(t, d)
	var x [8]byte
	if err := d.MemFreeHost(unsafe.Pointer(&x[0])); err == nil || !strings.Contains(err.Error(), "cuMemFreeHost") {
		t.Errorf("free of a pointer the driver did not allocate: %v", err)
	}
	if _, err := d.MemHostAlloc(0, 0); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("zero bytes: %v", err)
	}
	if _, err := d.MemHostAlloc(64, 0x10); err == nil || !strings.Contains(err.Error(), "0x10") {
		t.Errorf("flags 0x10: %v", err)
	}
	m, err := d.MemHostAlloc(64, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := unsafe.Pointer(&m.Bytes()[0])
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if err := d.MemFreeHost(p); err == nil {
		t.Error("a second cuMemFreeHost of the same pointer succeeded")
	}
}
