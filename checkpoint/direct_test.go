package checkpoint

import (
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// Where the kernel refuses a direct read (EINVAL: a file system or device
// without O_DIRECT that let the open through), every read goes through the
// page cache instead and gives the same values: tensors of each float type,
// odd sizes (rows of 77 bf16 values, 3 × 5 f16, a 4.9 MB f32 tensor that
// spans two 4 MiB reads), read whole and as column slices with one
// ReadSlices, element for element against the reference conversions; and
// no read is counted as direct. A direct read that comes back short
// without an error, or fails otherwise, is an error naming the file, not a
// fallback.
func TestDirectReadRefusedFallsBack(t *testing.T) {
	ts := []rawTensorData{patternTensor(BF16, 1001, 77), patternTensor(F16, 3, 5), patternTensor(F32, 1200, 1024)}
	f, path := openWrittenPread(t, ts)
	d, err := os.Open(path) // stands in for the direct descriptor: every read through it is refused below
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f.direct = d
	old := preadDirect
	defer func() { preadDirect = old }()
	var refused atomic.Int64 // the reads run on several goroutines
	preadDirect = func(*os.File, []byte, int64) (int, error) {
		refused.Add(1)
		return 0, &os.PathError{Op: "read", Path: path, Err: syscall.EINVAL}
	}
	before := directReads.Load()
	var sl []Slice
	for _, raw := range ts {
		x, ok := f.Tensor(raw.name)
		if !ok {
			t.Fatalf("no tensor %s", raw.name)
		}
		whole, err := x.RowsSlice(0, raw.shape[0])
		if err != nil {
			t.Fatal(err)
		}
		cols, err := x.ColsSlice(1, raw.shape[1]-1)
		if err != nil {
			t.Fatal(err)
		}
		sl = append(sl, whole, cols)
	}
	if err := ReadSlices(sl); err != nil {
		t.Fatal(err)
	}
	for i, raw := range ts {
		cols := raw.shape[1]
		for k, e := range sl[2*i].Dst {
			if math.Float32bits(e) != math.Float32bits(raw.want(int64(k))) {
				t.Fatalf("%s whole: element %d = %g, want %g", raw.name, k, e, raw.want(int64(k)))
			}
		}
		w := cols - 2
		for k, e := range sl[2*i+1].Dst {
			r, c := int64(k)/w, 1+int64(k)%w
			if want := raw.want(r*cols + c); math.Float32bits(e) != math.Float32bits(want) {
				t.Fatalf("%s columns [1, %d): [%d][%d] = %g, want %g", raw.name, cols-1, r, c, e, want)
			}
		}
	}
	if refused.Load() == 0 {
		t.Fatal("no read was tried with direct I/O: the fallback was not exercised")
	}
	if n := directReads.Load() - before; n != 0 {
		t.Errorf("%d reads counted as direct, all were refused", n)
	}

	x, _ := f.Tensor(ts[2].name)
	for _, c := range []struct {
		name string
		read func([]byte) (int, error)
		want error
	}{
		{"short", func(b []byte) (int, error) { return len(b) / 2, nil }, io.ErrUnexpectedEOF},
		{"eio", func(b []byte) (int, error) { return 0, &os.PathError{Op: "read", Path: path, Err: syscall.EIO} }, syscall.EIO},
	} {
		preadDirect = func(_ *os.File, b []byte, _ int64) (int, error) { return c.read(b) }
		s, err := x.RowsSlice(0, 1200)
		if err != nil {
			t.Fatal(err)
		}
		err = ReadSlices([]Slice{s})
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s direct read: error %v, want %v naming %s", c.name, err, c.want, path)
		}
	}
}
