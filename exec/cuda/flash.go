package cuda

import (
	_ "embed" // flash.cu
	"fmt"
)

// flashSource is the tensor-core prefill attention (flash.cu), compiled as
// a module of its own beside kernelSource: for fp16 and bf16 only (the
// m16n8k16 mma has no fp32 form), and only for sm_80 and newer (mma.sync
// m16n8k16, ldmatrix and cp.async).
//
//go:embed flash.cu
var flashSource string

// Launch shape of pb_flash_fwd_dD: 4 warps, 64 queries per block, key
// tiles of 64 (FLASH_THREADS, FLASH_BR, FLASH_BC in flash.cu).
const (
	flashThreads = 128
	flashBr      = 64
	flashBc      = 64
)

// flashKernelSig is the parameter list of every pb_flash_fwd_dD, in
// launch.go's letters: qkv, ao, kc, vc, pos, seq0, q, hl, kvl, context,
// scale_log2, bidir.
const flashKernelSig = "pppppiiiiifi"

// flashHeadDims are the head dims flash.cu is instantiated for.
var flashHeadDims = []int{64, 128}

// flashKernelName is the kernel for head dim hd.
func flashKernelName(hd int) string { return fmt.Sprintf("pb_flash_fwd_d%d", hd) }

// flashSharedBytes is the dynamic shared memory of pb_flash_fwd_dD: Q one
// 64-row tile, K and V two each (double buffering), rows of hd+8
// elements (the pad spreads ldmatrix's rows over the banks).
func flashSharedBytes(hd, elemBytes int) int { return (flashBr + 4*flashBc) * (hd + 8) * elemBytes }

// flashMinArch is the first compute capability with the instructions
// flash.cu uses (sm_80).
const flashMinArch = 80
