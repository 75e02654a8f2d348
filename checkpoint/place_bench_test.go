//go:build linux

package checkpoint

import (
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// BenchmarkPlacedTranspose converts a 2,816 × 1,024 bf16 tensor (a TP-1
// gate_proj of the benchmark layout, 5.8 MB) from memory into its
// transpose with one goroutine: Placement against ReadRows into a buffer
// and a tiled transpose after it (the two-step path), per element of the
// tensor, with the process's CPU time per op (user + system: other jobs
// on a shared machine change it less than the wall time).
func BenchmarkPlacedTranspose(b *testing.B) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	const rows, cols = 2816, 1024
	raw := patternTensor(BF16, rows, cols)
	path := filepath.Join(b.TempDir(), SingleFile)
	writeSafetensors(b, path, []rawTensorData{raw})
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	mem := *f
	mem.fd = nil
	x, _ := mem.Tensor(raw.name)
	out := make([]float32, rows*cols)
	row := make([]int, rows)
	for i := range row {
		row[i] = i
	}
	for _, perm := range []bool{false, true} {
		name := "contiguous"
		if perm {
			name = "permuted"
			for i := range row { // pairs swapped, as q and k heads are permuted
				row[i] = i ^ 1
			}
		}
		b.Run("placed/"+name, func(b *testing.B) {
			b.SetBytes(rows * cols * 2)
			defer cpuPerOp(b)()
			for range b.N {
				s := []Slice{{Tensor: x, Lo: 0, Hi: rows, Place: &Placement{Data: out, Row: row, Step: rows}}}
				if err := ReadSlices(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("two-step", func(b *testing.B) {
		b.SetBytes(rows * cols * 2)
		buf := make([]float32, rows*cols)
		defer cpuPerOp(b)()
		for range b.N {
			if err := x.ReadRows(buf, 0, rows); err != nil {
				b.Fatal(err)
			}
			for r0 := 0; r0 < rows; r0 += 64 {
				for c0 := 0; c0 < cols; c0 += 64 {
					for c := c0; c < min(c0+64, cols); c++ {
						o := out[c*rows:]
						for r := r0; r < min(r0+64, rows); r++ {
							o[r] = buf[r*cols+c]
						}
					}
				}
			}
		}
	})
}

// cpuPerOp starts counting the process's CPU time; the function it returns
// reports it per op (cpu-ms/op).
func cpuPerOp(b *testing.B) func() {
	now := func() float64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
	}
	t0 := now()
	return func() { b.ReportMetric((now()-t0)/float64(b.N), "cpu-ms/op") }
}
