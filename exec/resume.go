package exec

import (
	"fmt"

	"github.com/partbench/partbench/model"
)

// AddRows adds delta (one row of width len(delta)) to every row of x: the
// modification a client makes to a paused hidden state (an activation
// steering vector). An empty delta leaves x as it is.
func AddRows(x []float32, delta []float32) error {
	if len(delta) == 0 {
		return nil
	}
	if len(x)%len(delta) != 0 {
		return fmt.Errorf("a modification of %d elements does not divide the hidden state's %d elements into rows", len(delta), len(x))
	}
	for off := 0; off < len(x); off += len(delta) {
		row := x[off : off+len(delta)]
		for j, d := range delta {
			row[j] += d
		}
	}
	return nil
}

// HostX is micro-batch 0's residual stream x, elems elements, as host
// memory the caller may read and write: the CPU backend's buffer itself. A
// device backend's x is not host memory; pausing on it needs a device-to-host
// copy (cuMemcpyDtoH into cuMemHostAlloc pinned memory) that is not built.
func HostX(c Compute, elems int) (F32, error) {
	b, err := c.Buffer(model.X, 0, elems)
	if err != nil {
		return nil, err
	}
	x, ok := b.(F32)
	if !ok {
		return nil, fmt.Errorf("pause: the backend's buffer %q is %T, not host memory (exec.F32): pause and resume run on the CPU backend only", model.X, b)
	}
	return x, nil
}
