package cuda

import (
	"fmt"
	"math"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
)

// The GPU backend's paused hidden state (exec.HiddenState): the offload
// copies x into pinned host memory (cuMemHostAlloc, allocated once and
// freed by Close) with async copies on the rank's stream, synchronized
// before the host reads or writes the copy.

var _ pexec.HiddenState = (*Compute)(nil)

// hiddenX is x's first elems values of micro-batch 0 and its element type.
func (c *Compute) hiddenX(elems int) (*Buffer, dtype, error) {
	b, err := c.Buffer(model.X, 0, elems)
	if err != nil {
		return nil, dtype{}, err
	}
	x := b.(*Buffer)
	dt := c.dt
	if x.f32 {
		dt = dtypes["fp32"]
	}
	return x, dt, nil
}

// pinnedCopy returns the pinned host copy, grown to at least bytes (the
// old one freed: its contents are not kept).
func (c *Compute) pinnedCopy(bytes int64) ([]byte, error) {
	if c.pinned != nil && c.pinned.Len() >= bytes {
		return c.pinned.Bytes()[:bytes], nil
	}
	if err := c.pinned.Free(); err != nil {
		return nil, err
	}
	c.pinned = nil
	p, err := c.drv.MemHostAlloc(bytes, 0)
	if err != nil {
		return nil, fmt.Errorf("cuda: pinned host copy of the hidden state: %w", err)
	}
	c.pinned = p
	return p.Bytes(), nil
}

// OffloadX copies x's first elems values into the pinned host copy
// (cuMemcpyDtoHAsync on the stream, then a stream synchronization).
func (c *Compute) OffloadX(elems int) (int64, error) {
	x, _, err := c.hiddenX(elems)
	if err != nil {
		return 0, err
	}
	unpin, err := c.ready()
	if err != nil {
		return 0, err
	}
	defer unpin()
	host, err := c.pinnedCopy(x.Bytes())
	if err != nil {
		return 0, err
	}
	if err := c.stream.CopyDtoHAsync(host, x.ptr); err != nil {
		return 0, err
	}
	c.offloaded = x.Bytes()
	return x.Bytes(), c.stream.Synchronize()
}

// RestoreX adds delta to every row of the pinned copy and copies it back
// into x (cuMemcpyHtoDAsync on the stream, then a synchronization, so the
// copy is inside the resume latency).
func (c *Compute) RestoreX(elems int, delta []float32) (int64, error) {
	x, dt, err := c.hiddenX(elems)
	if err != nil {
		return 0, err
	}
	if c.pinned == nil || c.offloaded != x.Bytes() {
		return 0, fmt.Errorf("cuda: restore of %d values (%d B) of x: the pinned copy holds %d B (OffloadX first)", elems, x.Bytes(), c.offloaded)
	}
	unpin, err := c.ready()
	if err != nil {
		return 0, err
	}
	defer unpin()
	host := c.pinned.Bytes()[:x.Bytes()]
	if len(delta) > 0 {
		v := dt.decode(host)
		if err := pexec.AddRows(v, delta); err != nil {
			return 0, err
		}
		copy(host, dt.encode(v))
	}
	if err := c.stream.CopyHtoDAsync(x.ptr, host); err != nil {
		return 0, err
	}
	return x.Bytes(), c.stream.Synchronize()
}

// AddRowsX adds delta to every row of x on the device: x is read back
// (pageable, synchronous), changed on the host and written again.
func (c *Compute) AddRowsX(elems int, delta []float32) error {
	if len(delta) == 0 {
		return nil
	}
	x, dt, err := c.hiddenX(elems)
	if err != nil {
		return err
	}
	unpin, err := c.ready()
	if err != nil {
		return err
	}
	defer unpin()
	host := make([]byte, x.Bytes())
	if err := c.stream.CopyDtoHAsync(host, x.ptr); err != nil {
		return err
	}
	if err := c.stream.Synchronize(); err != nil {
		return err
	}
	v := dt.decode(host)
	if err := pexec.AddRows(v, delta); err != nil {
		return err
	}
	if err := c.stream.CopyHtoDAsync(x.ptr, dt.encode(v)); err != nil {
		return err
	}
	return c.stream.Synchronize()
}

// ClobberX writes NaN over x's first elems values.
func (c *Compute) ClobberX(elems int) error {
	x, dt, err := c.hiddenX(elems)
	if err != nil {
		return err
	}
	unpin, err := c.ready()
	if err != nil {
		return err
	}
	defer unpin()
	nan := make([]float32, elems)
	for i := range nan {
		nan[i] = float32(math.NaN())
	}
	if err := c.stream.CopyHtoDAsync(x.ptr, dt.encode(nan)); err != nil {
		return err
	}
	return c.stream.Synchronize()
}

// freePinned returns the pinned host copy (Close).
func (c *Compute) freePinned() error {
	err := c.pinned.Free()
	c.pinned, c.offloaded = nil, 0
	return err
}
