package cuda

import (
	"fmt"
	"math"

	"github.com/partbench/partbench/cgo/cuda"
)

// dtype is the element type of weights, activations and the KV cache.
type dtype struct {
	name   string        // "fp16", "bf16", "fp32"
	bytes  int           // element size
	blas   cuda.DataType // for cublasGemmEx
	define string        // NVRTC -D that selects it in kernelSource
	round  func(float32) float32
}

var dtypes = map[string]dtype{
	"fp16": {name: "fp16", bytes: 2, blas: cuda.R16F, define: "-DPB_F16",
		round: func(f float32) float32 { return f16ToF32(f32ToF16(f)) }},
	"bf16": {name: "bf16", bytes: 2, blas: cuda.R16BF, define: "-DPB_BF16",
		round: func(f float32) float32 { return bf16ToF32(f32ToBF16(f)) }},
	"fp32": {name: "fp32", bytes: 4, blas: cuda.R32F, define: "-DPB_F32",
		round: func(f float32) float32 { return f }},
}

func lookupDType(name string) (dtype, error) {
	d, ok := dtypes[name]
	if !ok {
		return dtype{}, fmt.Errorf("cuda: dtype %q is not supported by the GPU backend (fp16, bf16 or fp32)", name)
	}
	return d, nil
}

// encode converts float32 values to the element type's bytes.
func (d dtype) encode(v []float32) []byte {
	out := make([]byte, len(v)*d.bytes)
	switch d.bytes {
	case 4:
		for i, f := range v {
			putU32(out[4*i:], math.Float32bits(f))
		}
	default:
		conv := f32ToF16
		if d.name == "bf16" {
			conv = f32ToBF16
		}
		for i, f := range v {
			h := conv(f)
			out[2*i], out[2*i+1] = byte(h), byte(h>>8)
		}
	}
	return out
}

// decode converts element bytes to float32 values.
func (d dtype) decode(b []byte) []float32 {
	n := len(b) / d.bytes
	out := make([]float32, n)
	switch d.bytes {
	case 4:
		for i := range out {
			out[i] = math.Float32frombits(getU32(b[4*i:]))
		}
	default:
		conv := f16ToF32
		if d.name == "bf16" {
			conv = bf16ToF32
		}
		for i := range out {
			out[i] = conv(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
		}
	}
	return out
}

// Little-endian, as the device and every host partbench runs on.
func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
func getU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
