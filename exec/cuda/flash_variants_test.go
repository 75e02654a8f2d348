//go:build cgo

package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/partition"
)

// $PARTBENCH_FLASH_VARIANT: each name selects its variant, empty the
// default (w32hfdm since the H200 measured it fastest: 2.77 against 3.82 ms
// for the first kernel on the seed prefill, docs/measurements), and
// anything else stops New's parse with the variable, the value and the
// choices named.
func TestFlashVariantSelection(t *testing.T) {
	for _, tc := range []struct{ env, suffix string }{
		{"", "_w32hfdm"}, {"default", ""}, {"hf", "_hf"}, {"dm", "_dm"}, {" hfdm ", "_hfdm"}, {"w32hfdm", "_w32hfdm"},
	} {
		t.Setenv(flashVariantEnv, tc.env)
		set, err := parseWithout("flash")
		if err != nil {
			t.Fatalf("%q: %v", tc.env, err)
		}
		if v := selectedFlashVariant(set); v.suffix != tc.suffix || !set["flash"] {
			t.Errorf("%q: variant %+v (Without %v), want suffix %q and flash off", tc.env, v, set, tc.suffix)
		}
	}
	t.Setenv(flashVariantEnv, "fast")
	_, err := parseWithout("")
	if err == nil {
		t.Fatal("PARTBENCH_FLASH_VARIANT=fast accepted")
	}
	for _, want := range []string{flashVariantEnv, `"fast"`, "default, hf, dm, hfdm, w32hfdm"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// flash.cu's entry points: 2 head dims × (2 query tiles × 4 variants of
// 16-row warps + the 128-query tile's 1 of 32-row warps) = 18 distinct
// names, each read back to its shape and variant; blocks of 4 warps for
// 64 queries, 8 for 128 and 4 for 128 on 32-row warps.
func TestFlashAllKernels(t *testing.T) {
	ks := flashAllKernels()
	if len(ks) != 18 {
		t.Fatalf("%d entry points, want 18", len(ks))
	}
	seen := map[string]bool{}
	for _, k := range ks {
		n := k.name()
		if seen[n] {
			t.Errorf("%s twice", n)
		}
		seen[n] = true
		want := map[string]int{"64 16": 128, "128 16": 256, "128 32": 128}[fmt.Sprintf("%d %d", k.br, k.v.warpRows)]
		if k.threads() != want {
			t.Errorf("%s: %d threads, want %d", n, k.threads(), want)
		}
		back, ok := flashKernelOf(n)
		if !ok || back.flashKey != k.flashKey || back.v != k.v {
			t.Errorf("%s reads back as %+v (%v), want %+v", n, back, ok, k)
		}
	}
	if n := flashVariantName(128, 128, flashVariants[3]); n != "pb_flash_fwd_d128_b128_hfdm" {
		t.Errorf("d128 b128 hfdm is %s", n)
	}
	if !seen["pb_flash_fwd_d64_hf"] || !seen["pb_flash_fwd_d128_dm"] || !seen["pb_flash_fwd_d128_b128_w32hfdm"] || seen["pb_flash_fwd_d128_w32hfdm"] {
		t.Errorf("entry points %v lack the 64-query tiles' variants", seen)
	}
}

// On the fake driver, PARTBENCH_FLASH_VARIANT=hfdm runs the 76-query,
// head-dim-128 prefill of TestFlashChosenByShapeOnFakes on
// pb_flash_fwd_d128_hfdm, its timing entry says so, and Describe names the
// variant; decode stays off the flash kernels.
func TestFlashVariantChosenOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv(flashVariantEnv, "hfdm")
	plan := flashPlan(t, 128)
	c := fakeCompute(t, plan, 0, Options{DType: "fp16"})
	if _, ok, why := c.FlashAttention(); !ok {
		t.Fatalf("flash off: %s", why)
	}
	if d := c.Describe(); !strings.Contains(d, "variant hfdm") {
		t.Errorf("Describe %q does not name the variant", d)
	}
	var tagged int
	for _, n := range runPhase(t, c, plan, partition.Prefill, 0) {
		if strings.HasSuffix(n, " [flash d128 b64 hfdm]") {
			tagged++
		}
	}
	if tagged != 1 {
		t.Errorf("%d prefill entries tagged [flash d128 b64 hfdm], want 1", tagged)
	}
	for _, op := range plan.Program(0, partition.Prefill).Ops {
		if op.Kind == partition.Attention {
			if got := c.attentionKernel(&op); got != fmt.Sprintf("pb_flash_fwd_d%d_hfdm", op.HeadDim) {
				t.Errorf("attention runs on %s", got)
			}
		}
	}
}

// PB_FLASH_SET: bit k compiles flashVariants[k], the default always; the
// backend compiles the default and the selected variant only.
func TestFlashSetDefine(t *testing.T) {
	for _, tc := range []struct {
		vs   []flashVariant
		want string
	}{
		{nil, "-DPB_FLASH_SET=1"},
		{flashVariants[:1], "-DPB_FLASH_SET=1"},
		{flashVariants[3:4], "-DPB_FLASH_SET=9"}, // hfdm: 1 + 8
		{flashVariants[4:5], "-DPB_FLASH_SET=17"},
		{flashVariants, "-DPB_FLASH_SET=31"},
	} {
		if got := flashSetDefine(tc.vs...); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.vs, got, tc.want)
		}
	}
}

// flash.cu compiled with the hfdm variant's set has the default and the
// hfdm entry of every (head dim, query tile) and no other variant's.
func TestFlashSetCompiles(t *testing.T) {
	rtc := flashNVRTC(t)
	out, err := rtc.Compile(flashModule(), "flash.cu", cuda.ArchOption(9, 0, false), dtypes["fp16"].define, flashSetDefine(flashVariants[3]))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range flashAllKernels() {
		_, ok := ptxEntrySig(string(out.Image), k.name())
		if want := k.v.suffix == "" || k.v.suffix == "_hfdm"; ok != want {
			t.Errorf("%s in the PTX: %v, want %v", k.name(), ok, want)
		}
	}
}
