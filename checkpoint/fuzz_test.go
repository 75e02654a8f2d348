package checkpoint

import (
	"encoding/binary"
	"math"
	"os"
	"sort"
	"testing"
)

// FuzzHeader feeds arbitrary bytes to the header parser as a whole file. It
// must never panic, and whatever it accepts must satisfy the invariants the
// readers rely on: every tensor inside the data section, sized by dtype ×
// shape, names unique, and the tensors tiling the data section exactly. Every
// accepted float tensor is then converted, whole and by slices, to prove the
// views stay inside the file.
func FuzzHeader(f *testing.F) {
	for _, path := range []string{"testdata/llama-tiny/model.safetensors", "testdata/gpt2-tiny/model.safetensors"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		n := binary.LittleEndian.Uint64(data)
		f.Add(data[:8+n]) // the header alone: the data section is missing
		// The fixture's names and dtypes with small shapes: a valid file of a
		// few KB (the whole fixture, 600 KB, makes each mutation slow).
		var small []rawTensorData
		for _, x := range copyTensors(f, path) {
			shape := []int64{2, 3}[:min(len(x.shape), 2)]
			small = append(small, rawTensorData{x.name, x.dtype, shape, make([]byte, 4*TensorInfo{Shape: shape}.Elements())})
		}
		f.Add(encodeSafetensors(f, small))
	}
	f.Add(encodeSafetensors(f, []rawTensorData{
		{"h", F16, []int64{2, 2}, u16s(0x3C00, 0xC000, 0x7C00, 0x0001)},
		{"b", BF16, []int64{3}, u16s(0x3F80, 0, 0xFFFF)},
		{"z", F32, []int64{0, 4}, nil},
		{"s", F32, []int64{}, f32s(1)},
	}))
	for _, n := range []uint64{0, 1, 7, MaxHeaderBytes, MaxHeaderBytes + 1, math.MaxInt64, math.MaxUint64} {
		f.Add(append(binary.LittleEndian.AppendUint64(nil, n), `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`...))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(data, int64(len(data)))
		if err != nil {
			return
		}
		if h.DataStart < 8 || h.DataStart+h.DataBytes != int64(len(data)) {
			t.Fatalf("data section [%d, +%d) does not end the %d-byte file", h.DataStart, h.DataBytes, len(data))
		}
		var total int64
		for i, x := range h.Tensors {
			if i > 0 && h.Tensors[i-1].Name >= x.Name {
				t.Fatalf("names not sorted and unique at %q", x.Name)
			}
			if x.Begin < 0 || x.End < x.Begin || x.End > h.DataBytes || x.End-x.Begin != x.Elements()*x.DType.Size() {
				t.Fatalf("tensor %+v outside or mis-sized in a %d-byte data section", x, h.DataBytes)
			}
			total += x.End - x.Begin
		}
		if total != h.DataBytes {
			t.Fatalf("tensors hold %d bytes, the data section has %d", total, h.DataBytes)
		}
		byOffset := append([]TensorInfo(nil), h.Tensors...)
		sort.Slice(byOffset, func(i, j int) bool {
			return byOffset[i].Begin < byOffset[j].Begin || byOffset[i].Begin == byOffset[j].Begin && byOffset[i].End < byOffset[j].End
		})
		for i := 1; i < len(byOffset); i++ {
			if byOffset[i].Begin != byOffset[i-1].End {
				t.Fatalf("%q and %q do not abut", byOffset[i-1].Name, byOffset[i].Name)
			}
		}
		file := newFile("fuzz", h, data, nil)
		for _, name := range file.Names() {
			x, _ := file.Tensor(name)
			if !x.Info.DType.Float() {
				continue
			}
			all, err := x.Float32()
			if err != nil || int64(len(all)) != x.Info.Elements() {
				t.Fatalf("%s: %d values, %v", name, len(all), err)
			}
			if len(x.Info.Shape) == 2 {
				if _, err := x.Rows(0, x.Info.Shape[0]); err != nil {
					t.Fatal(err)
				}
				if _, err := x.Cols(x.Info.Shape[1]/2, x.Info.Shape[1]); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
