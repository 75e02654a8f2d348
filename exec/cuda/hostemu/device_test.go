package hostemu

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
)

// Device on the fake CUDA libraries (cgo/cuda/cudatest): the fake driver's
// fill_pui kernel writes its second argument into n words at its pointer,
// so a launch at an offset into the second buffer shows the copies in and
// out, the pointer arithmetic and the argument packing. Expected by hand:
// words 2, 3, 4 of buffer 1 become 7; buffer 0 and words 0–1 keep theirs.
func TestDeviceOnFakes(t *testing.T) {
	libs := cudatest.Build(t)
	libs.Setenv(t)
	d, err := NewDevice(Options{Name: "fake.cu", Source: "// compiled by the fake NVRTC\n", Kernels: []Kernel{{"fill_pui", "pui"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in0 := []byte{1, 2, 3, 4}
	in1 := make([]byte, 4*5)
	for i := range 5 {
		binary.LittleEndian.PutUint32(in1[4*i:], uint32(100+i))
	}
	out, err := d.Run(context.Background(), [][]byte{in0, in1},
		[]Launch{{Kernel: "fill_pui", Grid: D1(1), Block: D1(1), Args: []Arg{Ptr(1, 8), U64(7), I32(3)}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(out[0]) != string(in0) {
		t.Errorf("buffer 0 = %v, want %v", out[0], in0)
	}
	want := []uint32{100, 101, 7, 7, 7}
	for i, w := range want {
		if g := binary.LittleEndian.Uint32(out[1][4*i:]); g != w {
			t.Errorf("buffer 1 word %d = %d, want %d", i, g, w)
		}
	}
	// The launch checks are the Program's.
	if _, err := d.Run(context.Background(), [][]byte{in0}, []Launch{{Kernel: "fill_pui", Grid: D1(1), Block: D1(1), Args: []Arg{Ptr(0, 0), I32(7), I32(3)}}}); err == nil {
		t.Error("a launch with the wrong argument kinds ran")
	}
}

// Without a driver NewDevice says so with ErrUnavailable (the RealGPU
// tests skip on it).
func TestDeviceUnavailable(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/none.so")
	_, err := NewDevice(Options{Name: "x.cu"})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}
