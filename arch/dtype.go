package arch

import (
	"fmt"
	"strings"
)

// DType is a model's element type. The zero value is no type (unset).
type DType uint8

// The element types a model may be stored and computed in.
const (
	FP32 DType = iota + 1
	FP16
	BF16
	FP8
)

// dtypes is each DType's name and bytes per element (IEEE 754 binary32 and
// binary16, bfloat16's 16 bits, and an 8-bit float, E4M3 or E5M2).
var dtypes = [...]struct {
	name  string
	bytes int
}{FP32: {"fp32", 4}, FP16: {"fp16", 2}, BF16: {"bf16", 2}, FP8: {"fp8", 1}}

// DTypes is every element type, in order.
func DTypes() []DType { return []DType{FP32, FP16, BF16, FP8} }

// Valid reports whether d is one of DTypes.
func (d DType) Valid() bool { return d >= FP32 && d <= FP8 }

// Bytes is the size of one element (0 for an invalid DType).
func (d DType) Bytes() int {
	if !d.Valid() {
		return 0
	}
	return dtypes[d].bytes
}

// String is the name configs use ("fp32", "fp16", "bf16", "fp8").
func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypes[d].name
}

// dtypeNames is the allowed names, for errors.
func dtypeNames() string {
	var s []string
	for _, d := range DTypes() {
		s = append(s, d.String())
	}
	return strings.Join(s, ", ")
}

// ParseDType is the DType named s; an unknown name is an error naming the
// value and the allowed ones.
func ParseDType(s string) (DType, error) {
	for _, d := range DTypes() {
		if s == d.String() {
			return d, nil
		}
	}
	return 0, fmt.Errorf("dtype %q is not supported (allowed: %s)", s, dtypeNames())
}

// MarshalText writes the name.
func (d DType) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("dtype %d is not one of %s", uint8(d), dtypeNames())
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads a name (ParseDType).
func (d *DType) UnmarshalText(b []byte) error {
	v, err := ParseDType(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// TorchDType is the DType of a PyTorch dtype name as config.json writes it
// ("float32", "float16", "bfloat16"); 0 for any other.
func TorchDType(name string) DType {
	switch name {
	case "float32":
		return FP32
	case "float16":
		return FP16
	case "bfloat16":
		return BF16
	}
	return 0
}
