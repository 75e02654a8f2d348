package cuda

import (
	"fmt"

	"github.com/partbench/partbench/cgo/cuda"
)

// kernelSigs are the C parameter lists of the kernels in kernelSource, one
// letter per parameter: p a pointer, i an int, f a float, u an unsigned
// long long. Every launch is checked against its kernel's list, and a test
// compiles kernelSource (with clang, where it is installed) and compares
// these lists with the compiled entry points' parameters.
var kernelSigs = map[string]string{
	"pb_prompt_tokens": "ppiiiiiu",
	"pb_embed":         "pppiiiip",
	"pb_synthetic":     "ppiiup",
	"pb_rmsnorm":       "pppiif",
	"pb_layernorm":     "ppppiif",
	"pb_bias":          "ppii",
	"pb_pos_add":       "pppii",
	"pb_rope_kv":       "ppppiiiiiif",
	"pb_attention_v1":  "pppppiiiiiifi",
	"pb_attention_v2":  "pppppiiiiiifi",
	"pb_attention_v4":  "pppppiiiiiifi",
	"pb_attention_v8":  "pppppiiiiiifi",
	"pb_add":           "ppi",
	"pb_act":           "ppiii",
	"pb_last_rows":     "ppii",
	"pb_teacher":       "ppiiiiu",
	"pb_argmax":        "ppiii",
}

// args builds one launch's parameters and their signature.
type args struct {
	sig  [16]byte
	n    int
	vals [16]cuda.Arg
}

func (a *args) add(kind byte, v cuda.Arg) *args {
	if a.n < len(a.vals) {
		a.sig[a.n], a.vals[a.n] = kind, v
	}
	a.n++
	return a
}

func (a *args) p(v cuda.DevicePtr) *args { return a.add('p', cuda.Ptr(v)) }
func (a *args) i(v int) *args            { return a.add('i', cuda.I32(int32(v))) }
func (a *args) f(v float32) *args        { return a.add('f', cuda.F32(v)) }
func (a *args) u(v uint64) *args         { return a.add('u', cuda.U64(v)) }

// kernel is a loaded function with its signature.
type kernel struct {
	fn  cuda.Function
	sig string
}

// check reports a launch whose parameters do not match the kernel's.
func (k kernel) check(a *args) error {
	if a.n > len(a.vals) || string(a.sig[:a.n]) != k.sig {
		n := min(a.n, len(a.sig))
		return fmt.Errorf("cuda: launch %s with parameters %q, the kernel takes %q", k.fn.Name(), a.sig[:n], k.sig)
	}
	return nil
}
