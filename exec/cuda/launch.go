package cuda

import (
	"fmt"
	"slices"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
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

// LaunchCounter counts, without a device, what a Compute of plan's rank
// queues for ops run eagerly (no graph replay) one after another through
// Exec, with row copies (CopyRows) between them: the launches OpLaunches
// gives each op, the device position each micro-batch holds (an op at
// another position sets it first, one memset), and the norms a residual
// before them ran (fuse.go's peephole, as where the fused kernels load).
// The serving engine's launches per iteration are counted with it
// (serving.EngineLaunches).
//
// Attention takes the path a Compute with every module loaded takes: the
// flash kernel for a prefill of flashMinQ or more queries in fp16 or bf16
// at a head dim it has (on sm_80 and later), else cuBLAS attention for
// blasAttnMinQ or more queries whose workspace fits (two strided-batched
// GEMMs and pb_causal_softmax per sequence and query head of a KV head's
// group), else one kernel (pb_attention_vV, or split-KV's one-launch
// kernel), always after pb_rope_kv. A device that loads fewer modules
// launches other counts there.
type LaunchCounter struct {
	next    map[fuseKey]partition.Op
	done    *fuseKey
	pos     map[int]int
	prompt  int
	context int // keys per sequence in the KV cache (the Frame's Context)
	fp32    bool
	eb      int
	n       int
}

// NewLaunchCounter starts a count for plan's rank, every micro-batch's
// position unknown (as a new Compute's).
func NewLaunchCounter(plan *partition.Plan, rank int) *LaunchCounter {
	w := plan.Config.Workload
	return &LaunchCounter{next: planFusions(plan, rank), pos: map[int]int{}, prompt: w.PromptTokens(), context: w.Context,
		fp32: plan.DType == arch.FP32, eb: plan.DTypeBytes}
}

// attention is the launches of attention op after pb_rope_kv.
func (l *LaunchCounter) attention(op *partition.Op) int {
	if !l.fp32 && op.QLen >= flashMinQ && slices.Contains(flashHeadDims, op.HeadDim) {
		return 1
	}
	if op.QLen >= blasAttnMinQ && op.Heads%op.KVHeads == 0 && blasAttnBytes(blasAttnElems(op, l.context), l.eb) <= blasAttnMaxBytes {
		return op.Seqs * (op.Heads / op.KVHeads) * 3
	}
	return 1
}

// Exec counts op run at position past, as Compute.Exec queues it.
func (l *LaunchCounter) Exec(op *partition.Op, past int) {
	k := keyOf(op)
	if l.done != nil && *l.done != k { // beforeOp
		l.done = nil
	}
	if op.Kind == partition.Norm || op.Kind == partition.LayerNorm {
		if l.done != nil { // normDone: the residual before it ran it
			l.done = nil
			return
		}
	}
	newPos := false
	if setsPos(op.Kind) {
		if p, ok := l.pos[op.Microbatch]; !ok || p != past {
			newPos = true
			l.pos[op.Microbatch] = past
		}
	}
	l.n += OpLaunches(op, newPos, past < l.prompt)
	if op.Kind == partition.Attention {
		l.n += l.attention(op) - 1 // OpLaunches counts one attention kernel
	}
	if op.Kind == partition.Residual {
		if norm, ok := l.next[k]; ok { // fusedResidual: one kernel instead of pb_add
			nk := keyOf(&norm)
			l.done = &nk
		}
	}
}

// setsPos says whether an op of kind makes its micro-batch's device position
// its own first (Compute.setPos, from the input, position, attention and
// sample ops).
func setsPos(kind partition.Kind) bool {
	switch kind {
	case partition.Input, partition.Position, partition.Attention, partition.Sample:
		return true
	}
	return false
}

// Reset starts the count again at 0, every position unknown.
func (l *LaunchCounter) Reset() {
	clear(l.pos)
	l.done, l.n = nil, 0
}

// CopyRows counts one row copy.
func (l *LaunchCounter) CopyRows() { l.n++ }

// Launches is the count so far.
func (l *LaunchCounter) Launches() int { return l.n }

// OpLaunches is what op queues on the stream when run eagerly (no graph
// replay) on this backend's plain path: its kernel launches, cuBLAS calls,
// copies and memsets, as LaunchStats.Launches counts them. newPos says the
// op is the first of its micro-batch at a position other than the one last
// set there (one memset moves the device's position); prompt that its
// positions lie inside the prompt, whose ids pb_prompt_tokens makes on the
// device first. A residual launches one kernel whether or not it runs the
// norm after it (LaunchCounter leaves that norm out). The plain path is
// the one the serving engine's single-rank fp32 passes take: a GEMM by
// cublasGemmEx or the GEMV, pb_bias after a biased GEMM, one attention
// kernel after pb_rope_kv (LaunchCounter counts the other attention
// paths), pb_act after the up projection. Biased GEMMs take other paths
// wherever cuBLASLt or pb_bias_act loads (the bias as the GEMM's epilogue,
// or added with the activation: fewer launches), which are not counted
// here; a communication op queues nothing here (NCCL counts its own
// calls).
func OpLaunches(op *partition.Op, newPos, prompt bool) int {
	n := 0
	if newPos && setsPos(op.Kind) {
		n++ // setPos
	}
	switch op.Kind {
	case partition.Input:
		n++ // pb_embed or pb_synthetic
		if prompt {
			n++ // pb_prompt_tokens
		}
	case partition.Position, partition.Norm, partition.LayerNorm, partition.Activation, partition.Residual:
		n++
	case partition.Gemm:
		if op.Rows > 0 {
			n++
			if op.Bias != "" {
				n++ // pb_bias
			}
		}
	case partition.Attention:
		n += 2 // pb_rope_kv, pb_attention_vV
	case partition.Sample:
		n++ // pb_teacher
		if op.In == model.X {
			n++ // pb_last_rows: no LM head
		} else {
			n += 2 // the logits copied out, pb_argmax
		}
	}
	return n
}
