package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/partbench/partbench/fileio"
)

// File is one memory-mapped, validated safetensors file. Tensors are views
// into the mapping: nothing is read from disk until a view is converted, and
// then only the pages of the requested slice.
type File struct {
	path   string
	header *Header
	data   []byte // the whole file, read-only
	unmap  func() error
	index  map[string]int
	// fd, when set, reads tensors with pread (readSegments) instead of
	// faulting the mapping in; nil where the file is already in memory.
	fd *os.File
	// direct, when set (Weights.ReadDirect), is the file opened for direct
	// I/O: large page-aligned reads bypass the page cache.
	direct *os.File
}

// Open maps and validates a safetensors file.
func Open(path string) (*File, error) {
	// Refuse a device or a pipe before opening it (opening a named pipe
	// waits for a writer); checked again on the open file below.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fileio.FileKind(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if size < 8 {
		return nil, fmt.Errorf("%s: file of %d bytes is shorter than the 8-byte header length", path, size)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s: %d bytes do not fit this platform's address space", path, size)
	}
	data, unmap, err := mapFile(f, size)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	hdr := data
	if preadable {
		// Readahead off before the first read, and the header read with
		// pread: a fault on the mapping would read around it (the device's
		// whole readahead window, 8 MiB on the disks measured), and a later
		// read reaching a page so read ahead starts the next window.
		adviseExplicit(f)
		if hdr, err = readHeader(f, size); err != nil {
			unmap()
			return nil, fmt.Errorf("%s: reading the header: %w", path, err)
		}
	}
	h, err := ParseHeader(hdr, size)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	file := newFile(path, h, data, unmap)
	if preadable {
		file.fd, keep = f, true
	}
	return file, nil
}

// readHeader reads the header's length and, where ParseHeader will accept
// that length (within MaxHeaderBytes and the file), the header after it.
func readHeader(f *os.File, size int64) ([]byte, error) {
	b := make([]byte, 8)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeaderBytes || int64(n) > size-8 {
		return b, nil // ParseHeader says why
	}
	b = append(b, make([]byte, n)...)
	if _, err := f.ReadAt(b[8:], 8); err != nil {
		return nil, err
	}
	return b, nil
}

// newFile wraps a validated header and the bytes of the whole file.
func newFile(path string, h *Header, data []byte, unmap func() error) *File {
	file := &File{path: path, header: h, data: data, unmap: unmap, index: make(map[string]int, len(h.Tensors))}
	for i, t := range h.Tensors {
		file.index[t.Name] = i
	}
	return file
}

// Close unmaps the file; views taken from it must not be used afterwards.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	if f.direct != nil {
		f.direct.Close()
	}
	if f.fd != nil {
		f.fd.Close()
	}
	f.unmap, f.data, f.fd, f.direct = nil, nil, nil, nil
	return err
}

// Path is the file's path as opened.
func (f *File) Path() string { return f.path }

// Header is the file's validated header.
func (f *File) Header() *Header { return f.header }

// Names lists the file's tensors, sorted.
func (f *File) Names() []string {
	out := make([]string, len(f.header.Tensors))
	for i, t := range f.header.Tensors {
		out[i] = t.Name
	}
	return out
}

// Tensor returns a view of the named tensor.
func (f *File) Tensor(name string) (Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return Tensor{}, false
	}
	t := f.header.Tensors[i]
	start := f.header.DataStart
	return Tensor{Info: t, File: f.path, data: f.data[start+t.Begin : start+t.End : start+t.End], mapping: f.data, off: start + t.Begin, fd: f.fd, direct: f.direct}, true
}

// Tensor is a read-only view of one tensor in a mapped file.
type Tensor struct {
	Info TensorInfo
	File string // the file it lives in, for error messages
	data []byte

	mapping []byte   // the whole file
	off     int64    // where data starts in mapping
	fd      *os.File // for pread (nil: the mapping only)
	direct  *os.File // for direct I/O (nil: none)
}

// Bytes is the tensor's raw little-endian bytes: a view of the mapping, which
// is read-only (writing to it faults). Valid until the file is closed.
func (t Tensor) Bytes() []byte { return t.data }

func (t Tensor) errorf(format string, a ...any) error {
	return fmt.Errorf("%s: tensor %q: %s", t.File, t.Info.Name, fmt.Sprintf(format, a...))
}

func (t Tensor) checkFloat() error {
	if !t.Info.DType.Float() {
		return t.errorf("dtype %s cannot be read as float32 (allowed: F32, F16, BF16)", t.Info.DType)
	}
	return nil
}

// Float32 converts the whole tensor to float32.
func (t Tensor) Float32() ([]float32, error) {
	if err := t.checkFloat(); err != nil {
		return nil, err
	}
	out := make([]float32, t.Info.Elements())
	return out, t.readElems(out, 0)
}

// dims2 returns (rows, columns) of a rank-1 (one row per element) or rank-2 tensor.
func (t Tensor) dims2(what string) (int64, int64, error) {
	switch len(t.Info.Shape) {
	case 1:
		return t.Info.Shape[0], 1, nil
	case 2:
		return t.Info.Shape[0], t.Info.Shape[1], nil
	}
	return 0, 0, t.errorf("%s needs a tensor of rank 1 or 2, shape is %v", what, t.Info.Shape)
}

// Rows converts rows [r0, r1) of a 2-D tensor (elements [r0, r1) of a 1-D
// one) to float32, row-major: (r1−r0)·columns values. Only those rows are
// read: one contiguous range of the file.
func (t Tensor) Rows(r0, r1 int64) ([]float32, error) {
	n, err := t.rowsLen(r0, r1)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	return out, t.ReadRows(out, r0, r1)
}

func (t Tensor) rowsLen(r0, r1 int64) (int64, error) {
	if err := t.checkFloat(); err != nil {
		return 0, err
	}
	rows, cols, err := t.dims2("Rows")
	if err != nil {
		return 0, err
	}
	if r0 < 0 || r1 < r0 || r1 > rows {
		return 0, t.errorf("rows [%d, %d) outside [0, %d)", r0, r1, rows)
	}
	return (r1 - r0) * cols, nil
}

// ReadRows is Rows into a caller's buffer of exactly (r1−r0)·columns values,
// so that a loader can fill its own weight buffers without a second copy.
func (t Tensor) ReadRows(dst []float32, r0, r1 int64) error {
	n, err := t.rowsLen(r0, r1)
	if err != nil {
		return err
	}
	if int64(len(dst)) != n {
		return t.errorf("rows [%d, %d) are %d values, the buffer holds %d", r0, r1, n, len(dst))
	}
	es, cols := t.Info.DType.Size(), n/max(r1-r0, 1)
	lo := r0 * cols * es
	return t.readElems(dst, lo/es)
}

// readElems converts len(dst) elements starting at element e0: read with
// pread in large aligned reads, several in flight (readSegments), where the
// file is open; else from the mapping in blocks converted in parallel
// (forBlocks).
func (t Tensor) readElems(dst []float32, e0 int64) error {
	if t.fd != nil {
		p := defaultPlan()
		return readSegments(t.rangeSegments(nil, e0, int64(len(dst)), target{dst: dst}, p), p)
	}
	es := t.Info.DType.Size()
	n := int64(len(dst))
	willNeed(t.mapping, t.off+e0*es, t.off+(e0+n)*es)
	return forBlocks(n, es, func(a, b int64) error {
		decode(dst[a:b], t.data[(e0+a)*es:(e0+b)*es], t.Info.DType)
		return nil
	})
}

// Cols converts columns [c0, c1) of a 2-D tensor to float32, row-major:
// rows·(c1−c0) values. Each row contributes one contiguous run of the file;
// the rest of the row is not converted or copied.
func (t Tensor) Cols(c0, c1 int64) ([]float32, error) {
	n, err := t.colsLen(c0, c1)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	return out, t.ReadCols(out, c0, c1)
}

func (t Tensor) colsLen(c0, c1 int64) (int64, error) {
	if err := t.checkFloat(); err != nil {
		return 0, err
	}
	if len(t.Info.Shape) != 2 {
		return 0, t.errorf("Cols needs a tensor of rank 2, shape is %v", t.Info.Shape)
	}
	if cols := t.Info.Shape[1]; c0 < 0 || c1 < c0 || c1 > cols {
		return 0, t.errorf("columns [%d, %d) outside [0, %d)", c0, c1, cols)
	}
	return t.Info.Shape[0] * (c1 - c0), nil
}

// ReadCols is Cols into a caller's buffer of exactly rows·(c1−c0) values.
func (t Tensor) ReadCols(dst []float32, c0, c1 int64) error {
	n, err := t.colsLen(c0, c1)
	if err != nil {
		return err
	}
	if int64(len(dst)) != n {
		return t.errorf("columns [%d, %d) are %d values, the buffer holds %d", c0, c1, n, len(dst))
	}
	if t.fd != nil {
		p := defaultPlan()
		return readSegments(t.colSegments(nil, c0, c1, target{dst: dst}, p), p)
	}
	rows, cols := t.Info.Shape[0], t.Info.Shape[1]
	es, w := t.Info.DType.Size(), c1-c0
	if w == 0 { // a [huge, 0] tensor holds no bytes: do not walk its rows
		return nil
	}
	// From the mapping: blocks of whole rows converted in parallel.
	willNeed(t.mapping, t.off+c0*es, t.off+((rows-1)*cols+c1)*es)
	return forBlocks(rows, cols*es, func(r0, r1 int64) error {
		for r := r0; r < r1; r++ {
			lo := (r*cols + c0) * es
			decode(dst[r*w:(r+1)*w], t.data[lo:lo+w*es], t.Info.DType)
		}
		return nil
	})
}

// sortedNames is a helper for error messages listing a few names.
func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
