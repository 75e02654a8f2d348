package cuda

import (
	"fmt"
	"unsafe"
)

// HostAllocFlags are cuMemHostAlloc's flags (cuda.h: CU_MEMHOSTALLOC_*).
type HostAllocFlags uint32

const (
	// HostAllocPortable makes the memory pinned for every context, not only
	// the current one (CU_MEMHOSTALLOC_PORTABLE, 0x01).
	HostAllocPortable HostAllocFlags = 0x01
	// HostAllocDeviceMap maps the memory into the device's address space
	// (CU_MEMHOSTALLOC_DEVICEMAP, 0x02).
	HostAllocDeviceMap HostAllocFlags = 0x02
	// HostAllocWriteCombined allocates write-combined memory: fast for the
	// device to read, slow for the host to read (CU_MEMHOSTALLOC_WRITECOMBINED, 0x04).
	HostAllocWriteCombined HostAllocFlags = 0x04
)

// Pinned is page-locked host memory from cuMemHostAlloc: copies between it
// and the device on a stream (Stream.CopyHtoDAsync, CopyDtoHAsync) are
// asynchronous DMA, so the host must synchronize the stream before it
// reads what a device-to-host copy wrote, or writes what a host-to-device
// copy still reads. It is C memory: the Go garbage collector neither moves
// nor frees it; Free does.
type Pinned struct {
	d *Driver
	p unsafe.Pointer
	n int64
}

// MemHostAlloc allocates bytes of pinned host memory (cuMemHostAlloc; the
// current context must be set on the calling thread, see Context.Pin).
func (d *Driver) MemHostAlloc(bytes int64, flags HostAllocFlags) (*Pinned, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: cuMemHostAlloc of %d bytes: the size must be positive", bytes)
	}
	if flags&^(HostAllocPortable|HostAllocDeviceMap|HostAllocWriteCombined) != 0 {
		return nil, fmt.Errorf("cuda: cuMemHostAlloc flags %#x: allowed bits are 0x01 (portable), 0x02 (device map) and 0x04 (write-combined)", uint32(flags))
	}
	p, r := d.c.memHostAlloc(bytes, flags)
	if r != Success {
		return nil, d.fail(fmt.Sprintf("cuMemHostAlloc(%d bytes, flags %#x)", bytes, uint32(flags)), r)
	}
	return &Pinned{d: d, p: p, n: bytes}, nil
}

// Bytes is the memory as a byte slice (nil after Free).
func (m *Pinned) Bytes() []byte {
	if m == nil || m.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.p), m.n)
}

// Len is the allocation's size in bytes.
func (m *Pinned) Len() int64 { return m.n }

// Free returns the memory (cuMemFreeHost); a second Free does nothing.
func (m *Pinned) Free() error {
	if m == nil || m.p == nil {
		return nil
	}
	p := m.p
	m.p = nil
	if r := m.d.c.memFreeHost(p); r != Success {
		return m.d.fail("cuMemFreeHost", r)
	}
	return nil
}

// MemFreeHost frees p, which must be a pointer cuMemHostAlloc returned
// (a test's seam for the driver's refusal of any other pointer).
func (d *Driver) MemFreeHost(p unsafe.Pointer) error {
	if r := d.c.memFreeHost(p); r != Success {
		return d.fail("cuMemFreeHost", r)
	}
	return nil
}
