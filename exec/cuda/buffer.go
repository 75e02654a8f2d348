package cuda

import (
	"fmt"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
)

// Buffer is a view of a micro-batch buffer in device memory: Len elements
// of the model's element type (float32 for "tokens") at Ptr. A
// communicator that works on device memory (NCCL) passes Ptr, Len and
// DataType to the library on Compute.Stream; one that works on host
// memory stages through ReadF32 and WriteF32 (StagedComms).
type Buffer struct {
	c    *Compute
	name model.Buf
	mb   int
	ptr  cuda.DevicePtr
	n    int
	f32  bool
}

var _ pexec.Buffer = (*Buffer)(nil)

func (c *Compute) newBuffer(name model.Buf, mb int, b dbuf) *Buffer {
	return &Buffer{c: c, name: name, mb: mb, ptr: b.p, n: b.n, f32: b.f32}
}

// Len is the number of elements.
func (b *Buffer) Len() int { return b.n }

// Bytes is Len × the element size.
func (b *Buffer) Bytes() int64 { return int64(b.n) * int64(b.ElemBytes()) }

// ElemBytes is the element size: 2 for fp16 and bf16, 4 for fp32 and tokens.
func (b *Buffer) ElemBytes() int {
	if b.f32 {
		return 4
	}
	return b.c.dt.bytes
}

// DataType is the element type as CUDA names it (CUDA_R_16F, CUDA_R_16BF,
// CUDA_R_32F); NCCL's are ncclFloat16, ncclBfloat16, ncclFloat32.
func (b *Buffer) DataType() cuda.DataType {
	if b.f32 {
		return cuda.R32F
	}
	return b.c.dt.blas
}

// Ptr is the device address of the first element.
func (b *Buffer) Ptr() cuda.DevicePtr { return b.ptr }

// Name and Microbatch say which buffer this is.
func (b *Buffer) Name() model.Buf { return b.name }
func (b *Buffer) Microbatch() int { return b.mb }

// Compute is the backend the buffer belongs to.
func (b *Buffer) Compute() *Compute { return b.c }

func (b *Buffer) String() string {
	return fmt.Sprintf("%s[mb %d] (%d × %d bytes at %#x)", b.name, b.mb, b.n, b.ElemBytes(), uintptr(b.ptr))
}

// ReadF32 copies the buffer to the host, after the work queued before it,
// as float32.
func (b *Buffer) ReadF32() ([]float32, error) {
	raw := make([]byte, b.Bytes())
	if err := b.c.downloadInto(raw, b.ptr); err != nil {
		return nil, err
	}
	if b.f32 {
		return dtypes["fp32"].decode(raw), nil
	}
	return b.c.dt.decode(raw), nil
}

// WriteF32 queues a copy of v (Len values, rounded to the element type)
// into the buffer; the work queued after it sees the values.
func (b *Buffer) WriteF32(v []float32) error {
	if len(v) != b.n {
		return fmt.Errorf("cuda: write of %d values to %v", len(v), b)
	}
	enc := dtypes["fp32"].encode
	if !b.f32 {
		enc = b.c.dt.encode
	}
	raw := enc(v)
	unpin, err := b.c.pin()
	if err != nil {
		return err
	}
	defer unpin()
	return b.c.stream.CopyHtoDAsync(b.ptr, raw) // pageable: staged when the call returns
}

// memMeter is the device memory in use around New's setup (SetupMemory).
type memMeter struct {
	before, after int64
	ok            bool
}

var _ pexec.DeviceMemory = (*Compute)(nil)

// usedBytes is the device memory in use (total − free); the context must
// be current.
func (c *Compute) usedBytes() (int64, error) {
	free, total, err := c.drv.MemGetInfo()
	if err != nil {
		return 0, err
	}
	return total - free, nil
}

// meterSetup reads the memory in use at the start (begin) or the end of
// New's setup; a driver that cannot say leaves SetupMemory false.
func (c *Compute) meterSetup(begin bool) {
	used, err := c.usedBytes()
	switch {
	case begin:
		c.mem = memMeter{before: used, ok: err == nil}
	case err != nil:
		c.mem.ok = false
	default:
		c.mem.after = used
	}
}

// DeviceUsedBytes is the device memory in use now (exec.DeviceMemory).
func (c *Compute) DeviceUsedBytes() (int64, error) {
	unpin, err := c.pin()
	if err != nil {
		return 0, err
	}
	defer unpin()
	return c.usedBytes()
}

// SetupMemory is the memory in use before and after New's setup, and the
// cuBLAS workspace's share of the workspace kind (exec.DeviceMemory).
func (c *Compute) SetupMemory() (pexec.MemoryMeasure, bool) {
	m := pexec.MemoryMeasure{BeforeSetupBytes: c.mem.before, AfterSetupBytes: c.mem.after}
	if c.handle != nil && c.handle.HasWorkspace() {
		m.LibraryWorkspaceBytes = cublasWorkspaceBytes
	}
	return m, c.mem.ok
}
