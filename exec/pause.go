package exec

// HiddenState is a Compute whose paused hidden state (the first elems
// values of buffer x of micro-batch 0, what a prefill paused after layer N
// holds) can be copied to host memory the backend owns and back, modified
// row by row, and overwritten, without the caller touching device memory.
// The GPU backend implements it with pinned host memory (cuMemHostAlloc)
// and async copies on its stream; a backend whose x is host memory is
// driven through HostX instead.
type HiddenState interface {
	// OffloadX copies x's first elems values to the backend's host copy
	// (allocated once, reused) and returns when the copy is done, with the
	// bytes copied.
	OffloadX(elems int) (int64, error)
	// RestoreX adds delta (one row) to every row of the host copy, copies
	// it back into x, and returns when the copy is done, with the bytes
	// copied. The host copy must come from OffloadX of as many values.
	RestoreX(elems int, delta []float32) (int64, error)
	// AddRowsX adds delta (one row) to every row of x's first elems values
	// where x lies (the recompute strategy's modification).
	AddRowsX(elems int, delta []float32) error
	// ClobberX overwrites x's first elems values with NaN: while a pass is
	// paused the device's memory serves other work.
	ClobberX(elems int) error
}

// AddRowsX adds delta (one row) to every row of c's paused hidden state,
// x's first elems values: through c's HiddenState where it has one (the
// GPU backend), else in host memory (HostX).
func AddRowsX(c Compute, elems int, delta []float32) error {
	if h, ok := c.(HiddenState); ok {
		return h.AddRowsX(elems, delta)
	}
	x, err := HostX(c, elems)
	if err != nil {
		return err
	}
	return AddRows(x, delta)
}
