package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
)

// flashNVRTC is NVRTC as cuda.LoadNVRTC finds it, or a skip naming why
// not.
func flashNVRTC(t *testing.T) *cuda.NVRTC {
	t.Helper()
	rtc, err := cuda.LoadNVRTC()
	if err != nil {
		if os.Getenv("PARTBENCH_REQUIRE_NVRTC") == "1" {
			t.Fatalf("PARTBENCH_REQUIRE_NVRTC=1 and no NVRTC: %v", err)
		}
		t.Skipf("no NVRTC: %v", err)
	}
	t.Cleanup(func() { rtc.Close() })
	return rtc
}

// TestFlashSourceCompiles compiles flash.cu with NVRTC for sm_80 and
// sm_90 in fp16 and bf16 and checks that both kernels are in the image
// with the parameter list the host launches (launch.go's letters, read
// from the PTX entry), and that fp32 compiles to a module without them.
func TestFlashSourceCompiles(t *testing.T) {
	rtc := flashNVRTC(t)
	for _, arch := range []int{80, 90} {
		for _, dt := range []string{"fp16", "bf16", "fp32"} {
			out, err := rtc.Compile(flashModule(), "flash.cu", cuda.ArchOption(arch/10, arch%10, false), dtypes[dt].define)
			if err != nil {
				t.Fatalf("sm_%d %s: %v", arch, dt, err)
			}
			if strings.TrimSpace(out.Log) != "" {
				t.Errorf("sm_%d %s: compiler log is not empty:\n%s", arch, dt, out.Log)
			}
			ptx := string(out.Image)
			for _, fk := range flashAllKernels() {
				name := fk.name()
				sig, ok := ptxEntrySig(ptx, name)
				if dt == "fp32" {
					if ok {
						t.Errorf("sm_%d fp32: %s is defined; fp32 has no m16n8k16 mma", arch, name)
					}
					continue
				}
				if !ok {
					t.Fatalf("sm_%d %s: no entry %s in the PTX", arch, dt, name)
				}
				if sig != flashKernelSig {
					t.Errorf("sm_%d %s: %s takes %q, the host launches %q", arch, dt, name, sig, flashKernelSig)
				}
				if !strings.Contains(ptx, "mma.sync.aligned.m16n8k16") || !strings.Contains(ptx, "cp.async") || !strings.Contains(ptx, "ldmatrix") {
					t.Errorf("sm_%d %s: the PTX lacks mma.sync m16n8k16, ldmatrix or cp.async", arch, dt)
				}
			}
		}
	}
}

// ptxEntrySig reads the parameter list of .entry name from PTX text as
// launch.go's letters: .u64 a pointer (p; an unsigned long long, u, reads
// the same), .u32 or .s32 an int (i), .f32 a float (f).
func ptxEntrySig(ptx, name string) (string, bool) {
	at := strings.Index(ptx, ".entry "+name+"(")
	if at < 0 {
		return "", false
	}
	rest := ptx[at+len(".entry "+name+"("):]
	end := strings.Index(rest, ")")
	if end < 0 {
		return "", false
	}
	var sig strings.Builder
	for _, p := range strings.Split(rest[:end], ",") {
		f := strings.Fields(p)
		if len(f) < 2 {
			return "", false
		}
		switch f[1] {
		case ".u64":
			sig.WriteByte('p')
		case ".u32", ".s32":
			sig.WriteByte('i')
		case ".f32":
			sig.WriteByte('f')
		default:
			sig.WriteByte('?')
		}
	}
	return sig.String(), true
}

// TestExtraSourceCompiles compiles the second module (splitkv.cu and
// fused.cu) with NVRTC for sm_80 and sm_90 in every element type and
// checks its entries' parameter lists.
func TestExtraSourceCompiles(t *testing.T) {
	rtc := flashNVRTC(t)
	for _, arch := range []int{80, 90} {
		for _, dt := range []string{"fp16", "bf16", "fp32"} {
			out, err := rtc.Compile(extraSource(), "partbench_extra.cu", cuda.ArchOption(arch/10, arch%10, false), dtypes[dt].define)
			if err != nil {
				t.Fatalf("sm_%d %s: %v", arch, dt, err)
			}
			if strings.TrimSpace(out.Log) != "" {
				t.Errorf("sm_%d %s: compiler log is not empty:\n%s", arch, dt, out.Log)
			}
			want := map[string]string{"pb_splitkv_merge": splitKVMergeSig, "pb_rope_kv_table": ropeTableSig,
				"pb_add_rmsnorm": addRMSNormSig, "pb_add_layernorm": addLayerNormSig, "pb_gen": genSig, "pb_causal_softmax": causalSoftmaxSig}
			for _, v := range []int{1, 2, 4, 8} {
				want[fmt.Sprintf("pb_splitkv_partial_v%d", v)] = splitKVPartialSig
				want[fmt.Sprintf("pb_splitkv_v%d", v)] = splitKVOneSig
			}
			for name, sig := range want {
				got, ok := ptxEntrySig(string(out.Image), name)
				if !ok || got != strings.ReplaceAll(sig, "u", "p") { // PTX declares pointers and unsigned long longs alike (.u64)
					t.Errorf("sm_%d %s: %s takes %q (found %v), the host launches %q", arch, dt, name, got, ok, sig)
				}
			}
		}
	}
}
