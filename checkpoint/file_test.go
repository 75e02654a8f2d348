package checkpoint

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFixtureEmbeddingRow0 reads the first two values of row 0 of each
// fixture's token embedding through the mapped file and compares them with
// the raw bytes at an offset computed by hand from the header.
func TestFixtureEmbeddingRow0(t *testing.T) {
	for _, c := range []struct {
		file, tensor string
		offset       int64  // 8 + header length + data_offsets begin
		bits         uint32 // little-endian bytes at offset, read with xxd
		value        float32
	}{
		// llama-tiny: header 2144 bytes; model.embed_tokens.weight begins at 131072
		// (after lm_head.weight, 512·64·4 bytes). Bytes 2c b9 d6 3c → 0x3cd6b92c:
		// exponent 0x79 = 121 → 2^-6, fraction 0x56b92c/2^23 = 0.677525… → 0.0262113.
		{"llama-tiny/model.safetensors", "model.embed_tokens.weight", 8 + 2144 + 131072, 0x3cd6b92c, 0.0262113},
		// gpt2-tiny: header 2624 bytes; transformer.wte.weight begins at 433152.
		// Bytes b0 c3 8f 3c → 0x3c8fc3b0: exponent 0x79 → 2^-6, fraction
		// 0x0fc3b0/2^23 = 0.123158… → 0.0175494.
		{"gpt2-tiny/model.safetensors", "transformer.wte.weight", 8 + 2624 + 433152, 0x3c8fc3b0, 0.0175494},
	} {
		raw, err := os.ReadFile(fixture(c.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint32(raw[c.offset:]); got != c.bits {
			t.Fatalf("%s: raw bytes at %d = %#x, the fixture changed (want %#x)", c.file, c.offset, got, c.bits)
		}
		if d := float64(math.Float32frombits(c.bits)) - float64(c.value); math.Abs(d) > 1e-7 {
			t.Fatalf("hand decoding of %#x is off by %g", c.bits, d)
		}
		f, err := Open(fixture(c.file))
		if err != nil {
			t.Fatal(err)
		}
		x, ok := f.Tensor(c.tensor)
		if !ok {
			t.Fatalf("%s: no %s", c.file, c.tensor)
		}
		row, err := x.Rows(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(row) != 64 || math.Float32bits(row[0]) != c.bits {
			t.Errorf("%s row 0: len %d, [0] = %#x, want 64 values starting %#x", c.tensor, len(row), math.Float32bits(row[0]), c.bits)
		}
		f.Close()
	}
}

// TestSlicesEqualWhole: Rows and Cols of every 2-D fixture tensor equal the
// corresponding entries of the whole converted tensor.
func TestSlicesEqualWhole(t *testing.T) {
	f, err := Open(fixture("gpt2-tiny/model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, name := range f.Names() {
		x, _ := f.Tensor(name)
		if len(x.Info.Shape) != 2 {
			continue
		}
		all, err := x.Float32()
		if err != nil {
			t.Fatal(err)
		}
		rows, cols := x.Info.Shape[0], x.Info.Shape[1]
		r0, r1, c0, c1 := rows/4, rows/2+1, cols/3, cols-1
		rs, err := x.Rows(r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rs {
			if rs[i] != all[r0*cols+int64(i)] {
				t.Fatalf("%s Rows(%d,%d)[%d] differs", name, r0, r1, i)
			}
		}
		cs, err := x.Cols(c0, c1)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(cs)) != rows*(c1-c0) {
			t.Fatalf("%s Cols: %d values, want %d", name, len(cs), rows*(c1-c0))
		}
		for r := int64(0); r < rows; r++ {
			for c := c0; c < c1; c++ {
				if cs[r*(c1-c0)+c-c0] != all[r*cols+c] {
					t.Fatalf("%s Cols(%d,%d) at (%d,%d) differs", name, c0, c1, r, c)
				}
			}
		}
	}
}

// TestHalfDTypesSlices writes F16 and BF16 tensors of known bit patterns and
// reads row and column slices of them.
func TestHalfDTypesSlices(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "half.safetensors")
	// A 2×3 matrix [[1, -2, 0.5], [3, 0, -0.25]] in each encoding:
	// F16: 1 = 0x3C00, -2 = 0xC000, 0.5 = 0x3800 (exp 14), 3 = 0x4200 (exp 16,
	// fraction 0.5), 0 = 0, -0.25 = 0xB400 (exp 13).
	// BF16: the top halves of the float32 patterns: 0x3F80, 0xC000, 0x3F00,
	// 0x4040, 0, 0xBE80.
	writeSafetensors(t, path, []rawTensorData{
		{"h", F16, []int64{2, 3}, u16s(0x3C00, 0xC000, 0x3800, 0x4200, 0, 0xB400)},
		{"b", BF16, []int64{2, 3}, u16s(0x3F80, 0xC000, 0x3F00, 0x4040, 0, 0xBE80)},
		{"v", F32, []int64{3}, f32s(7, 8, 9)},
		{"i", "I32", []int64{1}, f32s(0)},
	})
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, name := range []string{"h", "b"} {
		x, _ := f.Tensor(name)
		r, err := x.Rows(1, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r, []float32{3, 0, -0.25}) {
			t.Errorf("%s Rows(1,2) = %v", name, r)
		}
		c, err := x.Cols(1, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c, []float32{-2, 0.5, 0, -0.25}) {
			t.Errorf("%s Cols(1,3) = %v", name, c)
		}
	}
	v, _ := f.Tensor("v")
	if r, err := v.Rows(1, 3); err != nil || !slices.Equal(r, []float32{8, 9}) {
		t.Errorf("1-D Rows(1,3) = %v, %v", r, err)
	}
	if _, err := v.Cols(0, 1); err == nil || !strings.Contains(err.Error(), "rank 2") {
		t.Errorf("Cols of a vector: %v", err)
	}
	h, _ := f.Tensor("h")
	for _, bad := range [][2]int64{{-1, 1}, {1, 0}, {0, 3}} {
		if _, err := h.Rows(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), `tensor "h"`) {
			t.Errorf("Rows%v: %v", bad, err)
		}
	}
	if _, err := h.Cols(2, 4); err == nil || !strings.Contains(err.Error(), "outside [0, 3)") {
		t.Errorf("Cols(2,4): %v", err)
	}
	if err := h.ReadRows(make([]float32, 2), 0, 1); err == nil || !strings.Contains(err.Error(), "3 values, the buffer holds 2") {
		t.Errorf("ReadRows into a short buffer: %v", err)
	}
	if err := h.ReadCols(make([]float32, 5), 0, 2); err == nil || !strings.Contains(err.Error(), "4 values, the buffer holds 5") {
		t.Errorf("ReadCols into a long buffer: %v", err)
	}
	i, _ := f.Tensor("i")
	if _, err := i.Float32(); err == nil || !strings.Contains(err.Error(), "I32 cannot be read as float32") || !strings.Contains(err.Error(), path) {
		t.Errorf("I32 as float: %v", err)
	}
}

// header builds a file from a raw JSON header (padded) and a data section.
func header(js string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	return append(append(b, js...), make([]byte, data)...)
}

func TestHeaderRefusals(t *testing.T) {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	if _, err := ParseHeader(header(ok, 8), int64(len(header(ok, 8)))); err != nil {
		t.Fatalf("valid header refused: %v", err)
	}
	lenOnly := func(n uint64, size int) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, n), make([]byte, size)...)
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"short file", []byte{1, 2, 3}, "shorter than the 8-byte"},
		{"huge length", lenOnly(math.MaxUint64, 16), "exceeds the limit"},
		{"over limit", lenOnly(MaxHeaderBytes+1, 16), "exceeds the limit"},
		{"past file end", lenOnly(100, 16), "exceeds the 16 bytes after"},
		{"empty header", lenOnly(0, 0), "not JSON"},
		{"not object", header(`[1,2]`, 0), "must be a JSON object"},
		{"trailing", header(`{} {}`, 0), "after the JSON object"},
		{"duplicate", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), `"a" appears twice`},
		{"unknown dtype", header(`{"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}}`, 4), `dtype "F33" is not supported`},
		{"negative dim", header(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "shape[0] = -1"},
		{"fractional dim", header(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, 4), `tensor "a"`},
		{"overflow", header(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, 4), "overflows"},
		{"offsets outside", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 4), "must satisfy"},
		{"size mismatch", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), "needs 8"},
		{"overlap", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "overlap"},
		{"gap", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "belong to no tensor"},
		{"short cover", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 8), "cover 4 bytes, the data section has 8"},
		{"missing field", header(`{"a":{"dtype":"F32","shape":[1]}}`, 4), "all required"},
		{"extra field", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, 4), "allowed fields"},
		{"three offsets", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,4]}}`, 4), "must be [begin, end]"},
		{"metadata not strings", header(`{"__metadata__":{"k":1}}`, 0), "__metadata__"},
	} {
		_, err := ParseHeader(c.file, int64(len(c.file)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestOpenNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := os.WriteFile(path, header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("Open of a bad file: %v, want an error starting with the path", err)
	}
}
