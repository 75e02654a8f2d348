package hostemu

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"
)

// build compiles testdata/name (or src when not empty) with defines, skipping
// without a C++ compiler.
func build(t *testing.T, name, src string, ks []Kernel, defines ...string) *Program {
	t.Helper()
	if _, err := Compiler(); err != nil {
		t.Skipf("no C++ compiler for the host-emulation harness: %v", err)
	}
	if src == "" {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		src = string(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := Build(ctx, t.TempDir(), Options{Name: name, Source: src, Defines: defines, Kernels: ks})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, p *Program, bufs [][]byte, ls ...Launch) ([][]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return p.Run(ctx, bufs, ls)
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// half16 rounds to binary16 and back through Go's own conversion (an
// independent implementation from the prelude's _Float16): values are
// chosen exact in fp16 and bf16 alike (multiples of 1/64 in [−2, 2)).
func exactSmall(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Intn(256)-128) / 64
	}
	return v
}

// u16bytes stores small exact values as fp16 (bf16) bits: for a value
// k/64 with |k| < 128 both are exact, so the product below is known.
func u16bytes(v []float32, bf16 bool) []byte {
	b := make([]byte, 2*len(v))
	for i, f := range v {
		var h uint16
		if bf16 {
			h = uint16(math.Float32bits(f) >> 16) // exact: f has ≤ 8 significant bits
		} else {
			h = f16bits(f)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

// f16bits encodes a normal float32 with at most 11 significant bits and
// exponent within binary16's normal range, or zero (no rounding needed).
func f16bits(f float32) uint16 {
	if f == 0 {
		return 0
	}
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	e := int(u>>23&0xff) - 127 + 15
	return sign | uint16(e)<<10 | uint16(u>>13&0x3ff)
}

// One warp through cp.async, ldmatrix (plain and .trans) and mma.sync
// gives D = A·B + C for a 16×16 by 16×8 tile; with inputs exact in the
// 16-bit type and products summed exactly (|sums| ≤ 16·4 + 2 in steps of
// 1/4096), D equals the float64 product exactly. A wrong fragment layout
// puts elements in the wrong place and fails.
func TestTensorCoreHelpersEmulated(t *testing.T) {
	for _, dt := range []struct {
		define string
		bf16   bool
	}{{"-DPB_F16", false}, {"-DPB_BF16", true}} {
		t.Run(dt.define, func(t *testing.T) {
			t.Parallel()
			p := build(t, "tc_selftest.cu", "", []Kernel{{"pb_tc_selftest", "pppp"}}, dt.define)
			r := rand.New(rand.NewSource(1))
			a, b, c := exactSmall(r, 16*16), exactSmall(r, 16*8), exactSmall(r, 16*8)
			bufs := [][]byte{u16bytes(a, dt.bf16), u16bytes(b, dt.bf16), f32bytes(c), make([]byte, 4*16*8)}
			out, err := run(t, p, bufs, Launch{Kernel: "pb_tc_selftest", Grid: D1(1), Block: D1(32),
				Args: []Arg{Ptr(0, 0), Ptr(1, 0), Ptr(2, 0), Ptr(3, 0)}})
			if err != nil {
				t.Fatal(err)
			}
			d := f32s(out[3])
			for i := 0; i < 16; i++ {
				for j := 0; j < 8; j++ {
					want := float64(c[i*8+j])
					for k := 0; k < 16; k++ {
						want += float64(a[i*16+k]) * float64(b[k*8+j])
					}
					if float64(d[i*8+j]) != want {
						t.Errorf("D[%d][%d] = %g, want %g", i, j, d[i*8+j], want)
					}
				}
			}
		})
	}
}

func TestRewriteExternShared(t *testing.T) {
	got := RewriteExternShared("extern __shared__ __align__(16) unsigned char smem[];\n\textern __shared__ float s [ ];")
	want := "unsigned char* smem = (unsigned char*)pb_emu_dynamic_smem();\n\tfloat* s = (float*)pb_emu_dynamic_smem();"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if s := "extern \"C\" { __shared__ float x[4]; }"; RewriteExternShared(s) != s {
		t.Errorf("rewrote %q", s)
	}
}

var _ = strings.Contains
