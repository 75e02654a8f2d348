package cuda

import (
	"fmt"
	"sync"

	kernelsrc "github.com/partbench/partbench/exec/cuda/kernels"
)

// The CUDA C++ source of every kernel the backend launches lives in
// kernels/*.cu (package kernels, embedded), compiled once per process and
// element type by NVRTC (-DPB_F16, -DPB_BF16 or -DPB_F32) as one module
// (kernels.Module of mainModule). It includes no CUDA header: 16-bit elements are
// stored as unsigned short and converted with PTX cvt instructions (fp16)
// or bit arithmetic (bf16), so it compiles with any NVRTC that has no CUDA
// headers beside it. All arithmetic is fp32; elements are rounded to
// nearest even when stored.
//
// Every kernel that depends on a cache position reads it from a device int
// (pos, one per micro-batch) instead of a parameter, so a captured decode
// step replays at any position: the host sets pos with cuMemsetD32Async
// before launching the graph.
//
// The hash (pb_mix, pb_unit in kernels/pb_common.cuh) is exec/cpu's
// splitmix64 finalizer and its top-24-bit map to [−1, 1), ported exactly
// (hash.go holds the Go mirror the tests compare with exec/cpu).

// mainModule are the kernel files of the backend's module: the kernels of
// kernelNames. (make kernel-check compiles every file of exec/cuda/kernels,
// listed here or not.)
var mainModule = []string{"attention.cu", "elementwise.cu", "norm.cu", "rope.cu", "tokens.cu"}

// kernelSource is kernels.Module(mainModule...): the backend's kernel files
// in one translation unit.
// Built on first use, not at package initialisation: every partbench
// process links this package, few compile kernels.
var kernelSource = sync.OnceValue(func() string {
	s, err := kernelsrc.Module(mainModule...)
	if err != nil {
		panic(err) // the embedded files are fixed at build time; kernels' tests check them
	}
	return s
})

// kernelNames are the functions the backend looks up.
var kernelNames = []string{
	"pb_prompt_tokens", "pb_embed", "pb_synthetic", "pb_rmsnorm", "pb_layernorm", "pb_bias", "pb_pos_add", "pb_rope_kv",
	"pb_attention_v1", "pb_attention_v2", "pb_attention_v4", "pb_attention_v8",
	"pb_add", "pb_act", "pb_last_rows", "pb_teacher", "pb_argmax",
}

// Launch shapes.
const (
	attnThreads   = 256 // ATTN_THREADS
	rowThreads    = 256 // rmsnorm, layernorm, embed, pos_add, rope_kv, last_rows: one block per row
	argmaxThreads = 1024
	flatThreads   = 256 // grid-stride kernels
	maxFlatBlocks = 4096
)

// launchBound is the largest launch of a kernel that the backend makes:
// threads per block, and bytes of dynamic shared memory (beyond 48 KiB
// only with optIn, the cuFuncSetAttribute opt-in). make kernel-check holds
// each compiled kernel's registers and shared memory to it, and launch
// refuses a launch beyond it.
type launchBound struct {
	threads int
	dynSmem int
	optIn   bool
}

// kernelLaunch is every kernel's launchBound (ops.go's launches).
var kernelLaunch = map[string]launchBound{
	"pb_prompt_tokens": {threads: flatThreads},
	"pb_embed":         {threads: rowThreads},
	"pb_synthetic":     {threads: rowThreads},
	"pb_rmsnorm":       {threads: rowThreads},
	"pb_layernorm":     {threads: rowThreads},
	"pb_bias":          {threads: flatThreads},
	"pb_pos_add":       {threads: rowThreads},
	"pb_rope_kv":       {threads: rowThreads},
	"pb_attention_v1":  {threads: attnThreads},
	"pb_attention_v2":  {threads: attnThreads},
	"pb_attention_v4":  {threads: attnThreads},
	"pb_attention_v8":  {threads: attnThreads},
	"pb_add":           {threads: flatThreads},
	"pb_act":           {threads: flatThreads},
	"pb_last_rows":     {threads: rowThreads},
	"pb_teacher":       {threads: flatThreads},
	"pb_argmax":        {threads: argmaxThreads},
}

// checkLaunchBound refuses a launch of name beyond its kernelLaunch entry.
func checkLaunchBound(name string, threads, dynSmem int) error {
	return checkBound(kernelLaunch, "kernelLaunch", name, threads, dynSmem)
}

// checkBound refuses a launch of name beyond its entry in bounds (table
// names bounds in the message; make kernel-check holds the kernels to it).
func checkBound(bounds map[string]launchBound, table, name string, threads, dynSmem int) error {
	b, ok := bounds[name]
	if !ok {
		return fmt.Errorf("cuda: kernel %s has no launch bound in %s", name, table)
	}
	if threads > b.threads || dynSmem > b.dynSmem {
		return fmt.Errorf("cuda: launch of %s with %d threads and %d bytes of dynamic shared memory, beyond its bound of %d threads and %d bytes (%s, checked by make kernel-check)",
			name, threads, dynSmem, b.threads, b.dynSmem, table)
	}
	return nil
}

// attentionVec picks the elements per lane V of the attention kernel for
// head_dim hd and elements of elemBytes: hd/V lanes hold one key, which
// must be a power of two of at most 32. It prefers the V whose V elements
// are one 16-byte load (8 for fp16/bf16, 4 for fp32), then the widest; 0
// means no variant fits (for example head_dim 96 or 512).
func attentionVec(hd, elemBytes int) int {
	fits := func(v int) bool {
		l := hd / v
		return hd%v == 0 && l >= 1 && l <= 32 && l&(l-1) == 0
	}
	if v := 16 / elemBytes; fits(v) {
		return v
	}
	for _, v := range []int{8, 4, 2, 1} {
		if fits(v) {
			return v
		}
	}
	return 0
}
