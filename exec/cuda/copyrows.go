package cuda

import (
	"fmt"

	"github.com/partbench/partbench/model"
)

// CopyRows queues on the rank's stream a device-to-device copy of elems
// elements of buffer b from micro-batch srcMB at element srcOff to
// micro-batch dstMB at dstOff (serving.RowCopier: the batched serving
// engine gathers its sequences' rows into one pass and scatters them back).
// Both ranges must lie inside their buffers; token ids are float32, every
// other buffer the run's element type.
func (c *Compute) CopyRows(b model.Buf, srcMB, srcOff, dstMB, dstOff, elems int) error {
	if c.fault != nil {
		return c.fault
	}
	if srcOff < 0 || dstOff < 0 || elems < 0 {
		return fmt.Errorf("copy rows of %q: offsets %d, %d and %d elements must be ≥ 0", b, srcOff, dstOff, elems)
	}
	if elems == 0 {
		return nil
	}
	src, err := c.frame.Buffer(b, srcMB, srcOff+elems)
	if err != nil {
		return fmt.Errorf("copy rows: %w", err)
	}
	dst, err := c.frame.Buffer(b, dstMB, dstOff+elems)
	if err != nil {
		return fmt.Errorf("copy rows: %w", err)
	}
	if src.p == dst.p && srcOff < dstOff+elems && dstOff < srcOff+elems {
		return fmt.Errorf("copy rows of %q: [%d, %d) and [%d, %d) of one buffer overlap", b, srcOff, srcOff+elems, dstOff, dstOff+elems)
	}
	eb := int64(c.dt.bytes)
	if src.f32 {
		eb = 4
	}
	c.stats.Launches++ // a copy queued one by one, as LaunchStats counts them
	return c.stream.CopyDtoDAsync(dst.p.Add(int64(dstOff)*eb), src.p.Add(int64(srcOff)*eb), int64(elems)*eb)
}
