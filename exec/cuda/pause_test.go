//go:build cgo

package cuda

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/model"
)

// pinnedCounts is the fake driver's pinned allocations and frees so far.
func pinnedCounts(t *testing.T, c *Compute) (allocs, frees int) {
	t.Helper()
	m, err := cudatest.Counters(c.drv.ErrorName(cuda.Result(cudatest.Trace)))
	if err != nil {
		t.Fatal(err)
	}
	return m["hostAllocs"], m["hostFrees"]
}

// The offload goes through one pinned host copy: x is copied out, NaN
// overwrites it, and the restore writes back the copy with the
// modification added to every row, bit for bit what the element type
// rounds x + delta to. The fake completes an async copy into pinned memory
// only at a synchronization, so an OffloadX that returned before
// synchronizing would leave garbage in the copy. A second pause reuses the
// copy; Close frees it.
func TestOffloadThroughPinnedMemoryOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	for _, dt := range []string{"fp32", "bf16"} {
		plan := tinyPlan(t, "test/single-tiny")
		c, err := New(plan, 0, Options{DType: dt})
		if err != nil {
			t.Fatal(err)
		}
		hidden := plan.Model.Hidden
		elems := 2 * hidden // two rows of the paused state
		buf, err := c.Buffer(model.X, 0, elems)
		if err != nil {
			t.Fatal(err)
		}
		x := buf.(*Buffer)
		orig := make([]float32, elems)
		for i := range orig {
			orig[i] = float32(i%64)/8 - 4 // multiples of 1/8 in [-4, 4): exact in bf16
		}
		delta := make([]float32, hidden)
		for j := range delta {
			delta[j] = float32(j%16) / 4
		}
		if _, err := c.RestoreX(elems, delta); err == nil || !strings.Contains(err.Error(), "OffloadX first") {
			t.Errorf("%s: restore before any offload: %v", dt, err)
		}
		a0, f0 := pinnedCounts(t, c)
		for pause := 0; pause < 2; pause++ {
			if err := x.WriteF32(orig); err != nil {
				t.Fatal(err)
			}
			n, err := c.OffloadX(elems)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(elems * dtypes[dt].bytes); n != want {
				t.Errorf("%s: offloaded %d B, want %d values × %d B = %d", dt, n, elems, dtypes[dt].bytes, want)
			}
			// The copy is complete when OffloadX returns (the fake completes
			// a copy into pinned memory only at a synchronization).
			if host := dtypes[dt].decode(c.pinned.Bytes()[:n]); !slicesEqualBits(host, orig) {
				t.Fatalf("%s: the pinned copy after OffloadX holds %v…, want x's %v…", dt, host[:3], orig[:3])
			}
			if err := c.ClobberX(elems); err != nil {
				t.Fatal(err)
			}
			got, err := x.ReadF32()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("%s: after ClobberX x[%d] = %v, want NaN", dt, i, v)
				}
			}
			if n, err := c.RestoreX(elems, delta); err != nil || n != int64(elems*dtypes[dt].bytes) {
				t.Fatalf("%s: restore: %d B, %v", dt, n, err)
			}
			if got, err = x.ReadF32(); err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				want := dtypes[dt].round(orig[i] + delta[i%hidden])
				if math.Float32bits(v) != math.Float32bits(want) {
					t.Fatalf("%s pause %d: restored x[%d] = %v, want %v + %v = %v", dt, pause, i, v, orig[i], delta[i%hidden], want)
				}
			}
		}
		if a, f := pinnedCounts(t, c); a-a0 != 1 || f != f0 {
			t.Errorf("%s: two pauses made %d pinned allocations and %d frees; want one allocation, reused, none freed", dt, a-a0, f-f0)
		}
		// Recompute's modification, on the device.
		if err := x.WriteF32(orig); err != nil {
			t.Fatal(err)
		}
		if err := c.AddRowsX(elems, delta); err != nil {
			t.Fatal(err)
		}
		got, err := x.ReadF32()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := dtypes[dt].round(orig[i] + delta[i%hidden]); v != want {
				t.Fatalf("%s: AddRowsX x[%d] = %v, want %v", dt, i, v, want)
			}
		}
		if err := c.AddRowsX(elems, delta[:hidden-1]); err == nil {
			t.Errorf("%s: a modification that does not divide x into rows was accepted", dt)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if a, f := pinnedCounts(t, c); a != f {
			t.Errorf("%s: after Close %d pinned allocations, %d frees: a leak", dt, a, f)
		}
	}
}

func slicesEqualBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
