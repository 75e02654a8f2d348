package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// rawTensorData is one tensor for writeSafetensors.
type rawTensorData struct {
	name  string
	dtype DType
	shape []int64
	data  []byte
}

// encodeSafetensors builds a safetensors file the way the reference writer
// does: tensors back to back in the given order, the header padded with
// spaces to a multiple of 8 bytes.
func encodeSafetensors(t testing.TB, tensors []rawTensorData) []byte {
	t.Helper()
	out := safetensorsHeader(t, tensors)
	for _, x := range tensors {
		out = append(out, x.data...)
	}
	return out
}

// safetensorsHeader is the part of encodeSafetensors before the tensors'
// bytes: the header's length and the header.
func safetensorsHeader(t testing.TB, tensors []rawTensorData) []byte {
	t.Helper()
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, x := range tensors {
		hdr[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int64{off, off + int64(len(x.data))}}
		off += int64(len(x.data))
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	return append(out, js...)
}

func writeSafetensors(t testing.TB, path string, tensors []rawTensorData) {
	t.Helper()
	if err := os.WriteFile(path, encodeSafetensors(t, tensors), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openWritten writes tensors as a new model.safetensors (writeSafetensors)
// and opens it; the file is closed when the test ends.
func openWritten(t testing.TB, tensors []rawTensorData) (*File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), SingleFile)
	writeSafetensors(t, path, tensors)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// openWrittenPread is openWritten for a test of the pread path: it skips
// the test where the platform has no pread (the file is read into memory).
func openWrittenPread(t testing.TB, tensors []rawTensorData) (*File, string) {
	t.Helper()
	f, path := openWritten(t, tensors)
	if f.fd == nil {
		t.Skip("no pread on this platform: the file is read into memory")
	}
	return f, path
}

// copyTensors reads every tensor of a fixture file as raw bytes.
func copyTensors(t testing.TB, path string) []rawTensorData {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rawTensorData
	for _, n := range f.Names() {
		x, _ := f.Tensor(n)
		out = append(out, rawTensorData{n, x.Info.DType, x.Info.Shape, append([]byte(nil), x.Bytes()...)})
	}
	return out
}

func fixture(name string) string { return filepath.Join("testdata", name) }

func u16s(v ...uint16) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, x)
	}
	return b
}

func f32s(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}
