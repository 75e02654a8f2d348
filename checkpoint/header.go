package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// MaxHeaderBytes bounds the JSON header of a safetensors file. The format's
// reference implementation (huggingface/safetensors) refuses headers above
// 100,000,000 bytes; a Llama-2-70B shard's header is about 30 KB.
const MaxHeaderBytes = 100 << 20

// DType is a safetensors element type, spelled as in the file header.
type DType string

// The element types partbench converts to float32.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
)

// dtypeBytes lists every byte-sized dtype of the safetensors format with its
// element size. Sub-byte types (F4, F6_*) are refused: no model partbench
// reads stores them, and their size is not a whole number of bytes.
var dtypeBytes = map[DType]int64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
	"I16": 2, "U16": 2, F16: 2, BF16: 2,
	"I32": 4, "U32": 4, F32: 4,
	"I64": 8, "U64": 8, "F64": 8, "C64": 8,
}

// Size is the bytes of one element, 0 for an unknown dtype.
func (d DType) Size() int64 { return dtypeBytes[d] }

// Float reports whether partbench converts d to float32 (F32, F16, BF16).
func (d DType) Float() bool { return d == F32 || d == F16 || d == BF16 }

func knownDTypes() string {
	names := make([]string, 0, len(dtypeBytes))
	for d := range dtypeBytes {
		names = append(names, string(d))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// TensorInfo is one tensor of a safetensors header.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
	// Begin and End are byte offsets into the data section (after the header).
	Begin, End int64
}

// Elements is the product of the shape (1 for a scalar).
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Header is a parsed, validated safetensors header.
type Header struct {
	// Tensors sorted by name.
	Tensors []TensorInfo
	// Metadata is the free-form "__metadata__" map (may be nil).
	Metadata map[string]string
	// DataStart is the file offset of the data section: 8 + header length.
	DataStart int64
	// DataBytes is the length of the data section.
	DataBytes int64
}

// ParseHeader parses and validates the header of a safetensors file of
// fileSize bytes whose first bytes are b (b must hold at least the 8-byte
// length and the JSON header; it may hold the whole file). The header is
// untrusted: its length is bounded by MaxHeaderBytes and the file size, every
// dtype must be known, shapes non-negative with a product that does not
// overflow, and the tensors' data_offsets must tile the data section exactly
// (inside it, no overlap, no gap, sized by dtype × shape).
func ParseHeader(b []byte, fileSize int64) (*Header, error) {
	if fileSize < 8 || len(b) < 8 {
		return nil, fmt.Errorf("file of %d bytes is shorter than the 8-byte header length", fileSize)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > MaxHeaderBytes {
		return nil, fmt.Errorf("header length %d exceeds the limit of %d bytes", n, MaxHeaderBytes)
	}
	if int64(n) > fileSize-8 {
		return nil, fmt.Errorf("header length %d exceeds the %d bytes after the length field", n, fileSize-8)
	}
	if uint64(len(b)-8) < n {
		return nil, fmt.Errorf("header length %d: only %d header bytes given", n, len(b)-8)
	}
	h := &Header{DataStart: 8 + int64(n), DataBytes: fileSize - 8 - int64(n)}
	if err := h.parseJSON(b[8 : 8+n]); err != nil {
		return nil, err
	}
	if err := h.validate(); err != nil {
		return nil, err
	}
	return h, nil
}

type rawTensor struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// parseJSON walks the top-level object token by token so that a repeated
// tensor name is an error rather than silently the last one.
func (h *Header) parseJSON(js []byte) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("header is not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("header must be a JSON object, starts with %v", tok)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("header is not JSON: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return fmt.Errorf("header: object key is %v, not a string", tok)
		}
		if seen[name] {
			return fmt.Errorf("header: tensor %q appears twice", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			if err := dec.Decode(&h.Metadata); err != nil {
				return fmt.Errorf("header: __metadata__ must map strings to strings: %w", err)
			}
			continue
		}
		var rt rawTensor
		raw := json.RawMessage{}
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("header: tensor %q: %w", name, err)
		}
		td := json.NewDecoder(bytes.NewReader(raw))
		td.DisallowUnknownFields()
		if err := td.Decode(&rt); err != nil {
			return fmt.Errorf("header: tensor %q: %w (allowed fields: dtype, shape, data_offsets)", name, err)
		}
		if rt.DType == nil || rt.Shape == nil || rt.DataOffsets == nil {
			return fmt.Errorf("header: tensor %q: dtype, shape and data_offsets are all required", name)
		}
		if len(*rt.DataOffsets) != 2 {
			return fmt.Errorf("header: tensor %q: data_offsets has %d numbers, must be [begin, end]", name, len(*rt.DataOffsets))
		}
		h.Tensors = append(h.Tensors, TensorInfo{
			Name: name, DType: DType(*rt.DType), Shape: *rt.Shape,
			Begin: (*rt.DataOffsets)[0], End: (*rt.DataOffsets)[1],
		})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fmt.Errorf("header is not JSON: %w", err)
	}
	// The format allows trailing spaces as padding; nothing else may follow.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("header: data after the JSON object")
	}
	return nil
}

func (h *Header) validate() error {
	for i := range h.Tensors {
		t := &h.Tensors[i]
		es := t.DType.Size()
		if es == 0 {
			return fmt.Errorf("header: tensor %q: dtype %q is not supported (allowed: %s)", t.Name, t.DType, knownDTypes())
		}
		nbytes := uint64(es)
		for j, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("header: tensor %q: shape[%d] = %d, must be ≥ 0", t.Name, j, d)
			}
			hi, lo := bits.Mul64(nbytes, uint64(d))
			if hi != 0 || lo > math.MaxInt64 {
				return fmt.Errorf("header: tensor %q: shape %v overflows 63 bits of bytes", t.Name, t.Shape)
			}
			nbytes = lo
		}
		if t.Begin < 0 || t.End < t.Begin || t.End > h.DataBytes {
			return fmt.Errorf("header: tensor %q: data_offsets [%d, %d] must satisfy 0 ≤ begin ≤ end ≤ %d (the data section)",
				t.Name, t.Begin, t.End, h.DataBytes)
		}
		if uint64(t.End-t.Begin) != nbytes {
			return fmt.Errorf("header: tensor %q: data_offsets [%d, %d] hold %d bytes, dtype %s × shape %v needs %d",
				t.Name, t.Begin, t.End, t.End-t.Begin, t.DType, t.Shape, nbytes)
		}
	}
	byOffset := make([]*TensorInfo, len(h.Tensors))
	for i := range h.Tensors {
		byOffset[i] = &h.Tensors[i]
	}
	sort.SliceStable(byOffset, func(i, j int) bool {
		a, b := byOffset[i], byOffset[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.End < b.End
	})
	end, prev := int64(0), ""
	for _, t := range byOffset {
		if t.Begin != end {
			if t.Begin < end {
				return fmt.Errorf("header: tensors %q and %q overlap at byte %d of the data section", prev, t.Name, t.Begin)
			}
			return fmt.Errorf("header: bytes [%d, %d) of the data section belong to no tensor (before %q)", end, t.Begin, t.Name)
		}
		end, prev = t.End, t.Name
	}
	if end != h.DataBytes {
		return fmt.Errorf("header: tensors cover %d bytes, the data section has %d", end, h.DataBytes)
	}
	sort.Slice(h.Tensors, func(i, j int) bool { return h.Tensors[i].Name < h.Tensors[j].Name })
	return nil
}
