package cuda

import (
	"fmt"
	"os"
	"strings"
)

// Variants of the tensor-core prefill kernels (flash.cu's FLASH_HEAVY_FIRST
// and FLASH_DIAG_MASK), each one more entry point per head dim and query
// tile beside the default: the same arithmetic in the same order (each
// output bit for bit the default's), another launch order or fewer
// instructions per tile. $PARTBENCH_FLASH_VARIANT picks the one prefill
// runs on, without a rebuild; docs/gpu.md gives the arithmetic behind each.

// flashVariant is one set of flash.cu's variant flags, named by the suffix
// its kernels carry.
type flashVariant struct {
	suffix string // "" for the default, "_hf", "_dm", "_hfdm", "_w32hfdm"
	name   string // the value of $PARTBENCH_FLASH_VARIANT
	what   string
	// warpRows is the query rows each warp owns: 16, or 32 (flash.cu's
	// flash_fwd_w32, built for 128-query tiles only).
	warpRows int
}

// flashVariants are the variants flash.cu instantiates for every
// (head dim, query tile); the first is the default.
var flashVariants = []flashVariant{
	{"", "default", "the launch order of the grid, every key tile masked per element", 16},
	{"_hf", "hf", "heavy first: the query tiles with the most causal key tiles start first", 16},
	{"_dm", "dm", "diagonal mask: per-element masks only on key tiles that cross a row's diagonal or the cache's end", 16},
	{"_hfdm", "hfdm", "heavy first and diagonal mask", 16},
	{"_w32hfdm", "w32hfdm", "heavy first and diagonal mask on 128-query tiles of 4 warps of 32 rows: each K and V fragment feeds two mma", 32},
}

// builtFor reports whether flash.cu instantiates v for query tile br.
func (v flashVariant) builtFor(br int) bool { return v.warpRows == 16 || br == 128 }

// flashVariantFor is v where flash.cu builds it for fk, else the default.
func flashVariantFor(fk flashKey, v flashVariant) flashVariant {
	if v.builtFor(fk.br) {
		return v
	}
	return flashVariants[0]
}

// flashDefaultVariant is the variant prefill runs on when
// $PARTBENCH_FLASH_VARIANT is empty: the one line to change to make
// another variant the backend's default. w32hfdm: on an H200 it ran the
// seed prefill's attention in 2.77 ms against 3.82 for the first kernel
// ("default"), bit for bit the same output, and the seed TTFT in 118.3
// against 122.7 ms (docs/measurements/gpu-check-h200-2026-11-26/fifth-call).
const flashDefaultVariant = "w32hfdm"

// flashVariantEnv selects the variant prefill runs on (Compute.initFlash).
const flashVariantEnv = "PARTBENCH_FLASH_VARIANT"

// flashVariantKey is the entry of the Without set (parseWithout) that
// carries the selected variant from New to initFlash.
const flashVariantKey = "flash-variant="

// parseFlashVariant is the variant named s ("" is flashDefaultVariant),
// or an error naming the variable, the value and the choices.
func parseFlashVariant(s string) (flashVariant, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = flashDefaultVariant
	}
	var names []string
	for _, v := range flashVariants {
		if v.name == s {
			return v, nil
		}
		names = append(names, v.name)
	}
	return flashVariant{}, fmt.Errorf("cuda: %s=%q: not one of %s", flashVariantEnv, s, strings.Join(names, ", "))
}

// flashVariantFromEnv reads $PARTBENCH_FLASH_VARIANT into the Without set
// as flashVariantKey+name (parseWithout calls it, so a bad value stops New).
func flashVariantFromEnv(set map[string]bool) error {
	v, err := parseFlashVariant(os.Getenv(flashVariantEnv))
	if err != nil {
		return err
	}
	set[flashVariantKey+v.name] = true
	return nil
}

// selectedFlashVariant is the variant the Without set carries
// (flashDefaultVariant when it carries none).
func selectedFlashVariant(without map[string]bool) flashVariant {
	for _, v := range flashVariants {
		if without[flashVariantKey+v.name] {
			return v
		}
	}
	v, _ := parseFlashVariant("")
	return v
}

// flashVariantName is the kernel of variant v for head dim hd and query
// tile br: "pb_flash_fwd_d128_b128_hfdm".
func flashVariantName(hd, br int, v flashVariant) string {
	return flashKernelName(hd, br) + v.suffix
}

// flashKernel is one entry point of flash.cu: its shape and variant.
type flashKernel struct {
	flashKey
	v flashVariant
}

// name is the entry point's name.
func (k flashKernel) name() string { return flashVariantName(k.hd, k.br, k.v) }

// threads is the entry point's block: one warp per warpRows query rows.
func (k flashKernel) threads() int { return k.br / k.v.warpRows * 32 }

// flashSetDefine is the NVRTC option that compiles flash.cu's default
// kernels and those of variants vs only (PB_FLASH_SET: bit k for
// flashVariants[k]).
func flashSetDefine(vs ...flashVariant) string {
	set := 1
	for _, v := range vs {
		for k, w := range flashVariants {
			if w == v {
				set |= 1 << k
			}
		}
	}
	return fmt.Sprintf("-DPB_FLASH_SET=%d", set)
}

// loadAllFlashVariants compiles and loads flash.cu with every variant and
// looks up all their kernels into c.k (TestRealGPUFlashVariants times them
// side by side); prefill keeps running on the selected variant. The
// caller holds the context.
func (c *Compute) loadAllFlashVariants() error {
	if !c.flash.loaded {
		return fmt.Errorf("cuda: flash attention is off: %s", c.flash.why)
	}
	img, err := c.compileSourceWith(flashModule(), "flash.cu", c.info.ComputeMajor, c.info.ComputeMinor, c.rtc.HasCUBIN(), flashSetDefine(flashVariants...))
	if err != nil {
		return err
	}
	m, err := c.drv.LoadModule(img.image)
	if err != nil {
		return fmt.Errorf("loading the %s flash kernels with every variant: %w", img.what, err)
	}
	for _, v := range flashVariants[1:] {
		if errs := c.flashFunctions(m, v); len(errs) > 0 {
			return fmt.Errorf("cuda: %s", strings.Join(errs, "; "))
		}
	}
	return nil
}

// flashAllKernels are every entry point of flash.cu: each variant of each
// (head dim, query tile).
func flashAllKernels() []flashKernel {
	var ks []flashKernel
	for _, fk := range flashKeys() {
		for _, v := range flashVariants {
			if v.builtFor(fk.br) {
				ks = append(ks, flashKernel{fk, v})
			}
		}
	}
	return ks
}
