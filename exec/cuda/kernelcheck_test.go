package cuda

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"

	"github.com/partbench/partbench/cgo/cuda"
	kernelsrc "github.com/partbench/partbench/exec/cuda/kernels"
)

// The compile gate (make kernel-check, docs/gpu.md): NVRTC compiles every
// kernel file in every element type for sm_80 and sm_90 (and sm_90a where
// a file uses Hopper-only instructions) with ptxas -v, and the test fails
// on a compile error or warning, a spill beyond kernels/spills.txt,
// registers or shared memory beyond what the kernel's launch bound
// (kernelLaunch) allows, and an entry point whose parameters differ from
// what the Go side launches (kernelSigs). Without NVRTC it skips, unless
// PARTBENCH_REQUIRE_NVRTC=1.

// gpuArch is one target and its limits (CUDA C++ Programming Guide,
// "Technical Specifications per Compute Capability": 64 Ki 32-bit
// registers per block, 255 per thread; 48 KiB of shared memory per block
// without the opt-in, 163 KiB (8.0) and 227 KiB (9.0) with it).
type gpuArch struct {
	name          string // "sm_90a"
	major, minor  int
	specific      bool // the "a" target
	regsPerBlock  int
	smemOptInByte int
}

const (
	regsPerThreadMax = 255
	smemDefaultBytes = 48 << 10
)

var gateArchs = []gpuArch{
	{"sm_80", 8, 0, false, 64 << 10, 163 << 10},
	{"sm_90", 9, 0, false, 64 << 10, 227 << 10},
	{"sm_90a", 9, 0, true, 64 << 10, 227 << 10},
}

// hopperOnly tells a file that needs sm_90a: it names a Hopper-only
// instruction or carries the marker "kernel-check: sm_90a".
var hopperOnly = regexp.MustCompile(`wgmma|setmaxnreg|kernel-check: sm_90a`)

// ptxasStats is one function's ptxas -v report.
type ptxasStats struct {
	entry                   bool
	regs, smem, stack       int
	spillStores, spillLoads int
}

var (
	ptxasEntry = regexp.MustCompile(`^ptxas info\s*: Compiling entry function '(\w+)' for '(\w+)'`)
	ptxasProps = regexp.MustCompile(`^ptxas info\s*: Function properties for (\w+)`)
	ptxasFrame = regexp.MustCompile(`^ptxas\s+\.\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsed  = regexp.MustCompile(`^ptxas info\s*: Used (\d+) registers`)
	ptxasSmem  = regexp.MustCompile(`(\d+) bytes smem`)
	ptxasInfo  = regexp.MustCompile(`^ptxas info\s*: `)
)

// parsePtxas reads NVRTC's log with --ptxas-options=-v: every function's
// registers, static shared memory, stack and spills, and every other
// non-empty line as a warning.
func parsePtxas(log string) (map[string]*ptxasStats, []string) {
	fns := map[string]*ptxasStats{}
	var warnings []string
	get := func(name string) *ptxasStats {
		if fns[name] == nil {
			fns[name] = &ptxasStats{}
		}
		return fns[name]
	}
	var entry, props string
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r\x00")
		switch {
		case strings.TrimSpace(line) == "":
		case ptxasEntry.MatchString(line):
			entry = ptxasEntry.FindStringSubmatch(line)[1]
			get(entry).entry = true
		case ptxasProps.MatchString(line):
			props = ptxasProps.FindStringSubmatch(line)[1]
		case ptxasFrame.MatchString(line):
			m := ptxasFrame.FindStringSubmatch(line)
			s := get(props)
			s.stack, _ = strconv.Atoi(m[1])
			s.spillStores, _ = strconv.Atoi(m[2])
			s.spillLoads, _ = strconv.Atoi(m[3])
		case ptxasUsed.MatchString(line):
			s := get(entry)
			s.regs, _ = strconv.Atoi(ptxasUsed.FindStringSubmatch(line)[1])
			if m := ptxasSmem.FindStringSubmatch(line); m != nil {
				s.smem, _ = strconv.Atoi(m[1])
			}
		case ptxasInfo.MatchString(line): // "0 bytes gmem", "Compiling … for" of device functions
		default:
			warnings = append(warnings, line)
		}
	}
	return fns, warnings
}

var (
	ptxEntry = regexp.MustCompile(`(?s)\.visible\s+\.entry\s+(\w+)\s*\((.*?)\)`)
	ptxParam = regexp.MustCompile(`\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s`)
)

// ptxSignatures are the entry points of PTX text with their parameters in
// kernelSigs' letters: .u64 is a pointer or an unsigned long long ("pu"),
// .u32/.s32 an int, .f32 a float; anything else is "?".
func ptxSignatures(ptx string) map[string][]string {
	kind := map[string]string{"u64": "pu", "b64": "pu", "s64": "u", "u32": "i", "s32": "i", "b32": "i", "f32": "f"}
	out := map[string][]string{}
	for _, m := range ptxEntry.FindAllStringSubmatch(ptx, -1) {
		var ps []string
		for _, p := range ptxParam.FindAllStringSubmatch(m[2], -1) {
			k, ok := kind[p[1]]
			if !ok {
				k = "?" + p[1]
			}
			ps = append(ps, k)
		}
		out[m[1]] = ps
	}
	return out
}

// sigMismatch says how compiled parameters differ from a kernelSigs list ("" when they agree).
func sigMismatch(ptx []string, sig string) string {
	if len(ptx) != len(sig) {
		return fmt.Sprintf("takes %d parameters, the Go side launches %d (%q)", len(ptx), len(sig), sig)
	}
	for i, k := range ptx {
		if !strings.ContainsRune(k, rune(sig[i])) {
			return fmt.Sprintf("parameter %d is %s, the Go side passes %q (kernelSigs %q)", i, strings.TrimPrefix(k, "?"), sig[i], sig)
		}
	}
	return ""
}

// spillAllowance is one line of kernels/spills.txt: function, dtype,
// arch ("*" for any), and the spill bytes (stores, loads) allowed.
type spillAllowance struct {
	fn, dtype, arch string
	stores, loads   int
}

func readSpillAllowlist(path string) ([]spillAllowance, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []spillAllowance
	for i, line := range strings.Split(string(b), "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 {
			return nil, fmt.Errorf("%s line %d: %q: want FUNCTION DTYPE ARCH STORE_BYTES LOAD_BYTES", path, i+1, line)
		}
		st, err1 := strconv.Atoi(f[3])
		ld, err2 := strconv.Atoi(f[4])
		if err1 != nil || err2 != nil || st < 0 || ld < 0 {
			return nil, fmt.Errorf("%s line %d: spill bytes %q %q are not non-negative integers", path, i+1, f[3], f[4])
		}
		out = append(out, spillAllowance{f[0], f[1], f[2], st, ld})
	}
	return out, nil
}

func allowedSpill(list []spillAllowance, fn, dtype, arch string) (stores, loads int) {
	for _, a := range list {
		if a.fn == fn && (a.dtype == "*" || a.dtype == dtype) && (a.arch == "*" || a.arch == arch) {
			return a.stores, a.loads
		}
	}
	return 0, 0
}

// gateUnit is one file of kernels to compile: its source and the
// signatures and bounds its entries are held to.
type gateUnit struct {
	name, src string
	sigs      map[string]string
	bounds    map[string]launchBound
}

// gateResult is one compilation's findings.
type gateResult struct {
	unit, dtype string
	arch        gpuArch
	stats       map[string]*ptxasStats
	problems    []string
}

func gateCompile(rtc *cuda.NVRTC, u gateUnit, dt dtype, a gpuArch, allow []spillAllowance) gateResult {
	res := gateResult{unit: u.name, dtype: dt.name, arch: a}
	bad := func(f string, args ...any) {
		res.problems = append(res.problems, fmt.Sprintf("%s %s %s: ", u.name, dt.name, a.name)+fmt.Sprintf(f, args...))
	}
	opt := cuda.ArchOption(a.major, a.minor, true)
	if a.specific {
		opt = cuda.ArchSpecificOption(a.major, a.minor, true)
	}
	out, err := rtc.Compile(u.src, u.name, opt, dt.define, "--ptxas-options=-v")
	if err != nil {
		bad("%v", err)
		return res
	}
	stats, warnings := parsePtxas(out.Log)
	res.stats = stats
	for _, w := range warnings {
		bad("compiler warning: %s", w)
	}
	sigs := ptxSignatures(string(out.PTX)) // a file may hold no kernel of an element type (#if PB_ELEM_BYTES == 2)
	for fn, s := range stats {
		st, ld := allowedSpill(allow, fn, dt.name, a.name)
		if s.spillStores > st || s.spillLoads > ld {
			bad("%s spills %d bytes (stores) and %d (loads); kernels/spills.txt allows %d and %d", fn, s.spillStores, s.spillLoads, st, ld)
		}
	}
	for fn, ps := range sigs {
		sig, ok := u.sigs[fn]
		if !ok {
			bad("entry point %s has no signature in kernelSigs: the Go side does not launch it", fn)
			continue
		}
		if m := sigMismatch(ps, sig); m != "" {
			bad("%s %s", fn, m)
		}
		b, ok := u.bounds[fn]
		if !ok {
			bad("entry point %s has no launch bound in kernelLaunch", fn)
			continue
		}
		s := stats[fn]
		if s == nil {
			bad("ptxas reported nothing for %s", fn)
			continue
		}
		warps := (b.threads + 31) / 32
		if s.regs > regsPerThreadMax || s.regs*32*warps > a.regsPerBlock {
			bad("%s uses %d registers a thread: %d threads need %d, beyond %d a block (or %d a thread)",
				fn, s.regs, b.threads, s.regs*32*warps, a.regsPerBlock, regsPerThreadMax)
		}
		limit := smemDefaultBytes
		if b.optIn {
			limit = a.smemOptInByte
		}
		if s.smem+b.dynSmem > limit {
			bad("%s needs %d bytes of static and %d of dynamic shared memory, beyond %d (opt-in %v)", fn, s.smem, b.dynSmem, limit, b.optIn)
		}
	}
	return res
}

// gateUnits are the kernel files (held to kernelSigs and kernelLaunch),
// flash.cu and the second module (extraGateUnits), and the tensor-core
// self-test of the harness.
func gateUnits(t *testing.T) []gateUnit {
	t.Helper()
	var us []gateUnit
	for _, f := range kernelsrc.Files() {
		src, err := kernelsrc.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, gateUnit{name: f, src: src, sigs: kernelSigs, bounds: kernelLaunch})
	}
	b, err := os.ReadFile(filepath.Join("hostemu", "testdata", "tc_selftest.cu"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for _, h := range []string{"pb_tc.cuh", "pb_common.cuh"} {
		text, err := kernelsrc.Raw(h)
		if err != nil {
			t.Fatal(err)
		}
		src = strings.Replace(src, `#include "`+h+`"`, text, 1)
	}
	us = append(us, extraGateUnits()...)
	us = append(us, gateUnit{name: "hostemu/testdata/tc_selftest.cu", src: src,
		sigs:   map[string]string{"pb_tc_selftest": "pppp", "pb_ldmatrix_selftest": "pp", "pb_cp_async_zfill_selftest": "pp"},
		bounds: map[string]launchBound{"pb_tc_selftest": {threads: 32}, "pb_ldmatrix_selftest": {threads: 32}, "pb_cp_async_zfill_selftest": {threads: 32}}})
	return us
}

func TestKernelCheck(t *testing.T) {
	kernelCheckOnly(t)
	rtc, err := loadNVRTC() // the backend's own loader (and binding, kept for the process)
	if err != nil {
		if os.Getenv("PARTBENCH_REQUIRE_NVRTC") == "1" {
			t.Fatalf("PARTBENCH_REQUIRE_NVRTC=1 and no NVRTC (scripts/install-test-deps.sh fetches Debian's): %v", err)
		}
		t.Skipf("no NVRTC (scripts/install-test-deps.sh fetches Debian's; PARTBENCH_REQUIRE_NVRTC=1 makes this a failure): %v", err)
	}
	major, minor, err := rtc.Version()
	if err != nil {
		t.Fatal(err)
	}
	if !rtc.HasCUBIN() {
		t.Fatalf("NVRTC %d.%d at %s has no nvrtcGetCUBIN: ptxas statistics need NVRTC 11.1 or newer", major, minor, rtc.Path())
	}
	t.Logf("NVRTC %d.%d from %s", major, minor, rtc.Path())
	allow, err := readSpillAllowlist(filepath.Join("kernels", "spills.txt"))
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		u  gateUnit
		dt dtype
		a  gpuArch
	}
	var jobs []job
	for _, a := range gateArchs {
		for _, u := range gateUnits(t) {
			if a.specific && !hopperOnly.MatchString(u.src) {
				continue
			}
			if a.specific && major < 12 {
				t.Errorf("%s needs sm_90a, which NVRTC %d.%d cannot target (12.0 or newer)", u.name, major, minor)
				continue
			}
			for _, name := range []string{"fp32", "fp16", "bf16"} {
				jobs = append(jobs, job{u, dtypes[name], a})
			}
		}
	}
	results := make([]gateResult, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = gateCompile(rtc, jobs[i].u, jobs[i].dt, jobs[i].a, allow)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()

	// Every kernel the backend looks up is compiled in every element type
	// for sm_80 and sm_90.
	seen := map[string]bool{}
	for _, r := range results {
		for _, p := range r.problems {
			t.Error(p)
		}
		for fn, s := range r.stats {
			if s.entry {
				seen[fn+" "+r.dtype+" "+r.arch.name] = true
			}
		}
	}
	for _, a := range gateArchs[:2] {
		for _, dt := range []string{"fp32", "fp16", "bf16"} {
			for _, n := range kernelNames {
				if !seen[n+" "+dt+" "+a.name] {
					t.Errorf("%s: no entry point %s in %s for %s", dt, n, strings.Join(kernelsrc.Files(), ", "), a.name)
				}
			}
		}
	}
	t.Log("\n" + gateTable(results))
}

// gateTable is, per architecture, every kernel's registers, static shared
// memory, stack and spills in each element type.
func gateTable(results []gateResult) string {
	var b strings.Builder
	for _, a := range gateArchs {
		var rows []string
		for _, r := range results {
			if r.arch.name != a.name {
				continue
			}
			for fn, s := range r.stats {
				if !s.entry {
					continue
				}
				rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%d\t%d/%d", fn, r.dtype, r.unit, s.regs, s.smem, s.stack, s.spillStores, s.spillLoads))
			}
		}
		if len(rows) == 0 {
			continue
		}
		sort.Strings(rows)
		fmt.Fprintf(&b, "%s\n", a.name)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "kernel\tdtype\tfile\tregisters\tsmem B\tstack B\tspill st/ld B")
		for _, r := range rows {
			fmt.Fprintln(tw, r)
		}
		tw.Flush()
	}
	return b.String()
}

// The parsers on a log and PTX as NVRTC 12.4 writes them.
func TestPtxasAndPTXParsers(t *testing.T) {
	log := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'pb_attention_v8' for 'sm_80'
ptxas info    : Function properties for pb_attention_v8
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 48 registers, 8 bytes cumulative stack size, 10240 bytes smem, 424 bytes cmem[0], 16 bytes cmem[2]
ptxas info    : Function properties for block_sum
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'pb_add' for 'sm_80'
ptxas info    : Function properties for pb_add
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 372 bytes cmem[0]
kernel.cu(3): warning #177-D: variable "x" was declared but never referenced
`
	fns, warnings := parsePtxas(log)
	if s := fns["pb_attention_v8"]; s == nil || !s.entry || s.regs != 48 || s.smem != 10240 || s.stack != 8 || s.spillStores != 4 || s.spillLoads != 4 {
		t.Errorf("pb_attention_v8: %+v", s)
	}
	if s := fns["pb_add"]; s == nil || !s.entry || s.regs != 10 || s.smem != 0 {
		t.Errorf("pb_add: %+v", s)
	}
	if s := fns["block_sum"]; s == nil || s.entry {
		t.Errorf("block_sum (a device function): %+v", s)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "warning #177-D") {
		t.Errorf("warnings %q", warnings)
	}
	ptx := `.visible .entry pb_add(
	.param .u64 pb_add_param_0,
	.param .u64 pb_add_param_1,
	.param .u32 pb_add_param_2
)
.visible .entry pb_rmsnorm(
	.param .u64 pb_rmsnorm_param_0,
	.param .f32 pb_rmsnorm_param_1
)`
	sigs := ptxSignatures(ptx)
	if m := sigMismatch(sigs["pb_add"], "ppi"); m != "" {
		t.Errorf("pb_add: %s", m)
	}
	if m := sigMismatch(sigs["pb_add"], "ppf"); !strings.Contains(m, "parameter 2 is i") {
		t.Errorf("pb_add against ppf: %q", m)
	}
	if m := sigMismatch(sigs["pb_rmsnorm"], "pfi"); !strings.Contains(m, "takes 2 parameters, the Go side launches 3") {
		t.Errorf("pb_rmsnorm against pfi: %q", m)
	}
}

// The committed allowlist parses and names kernels; wildcards match.
func TestSpillAllowlist(t *testing.T) {
	list, err := readSpillAllowlist(filepath.Join("kernels", "spills.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		_, first := kernelLaunch[a.fn]
		_, extra := extraLaunch[a.fn]
		if !first && !extra {
			t.Errorf("kernels/spills.txt names %s, which is no kernel of kernelLaunch or extraLaunch", a.fn)
		}
	}
	if st, ld := allowedSpill([]spillAllowance{{"f", "*", "sm_80", 8, 4}}, "f", "bf16", "sm_80"); st != 8 || ld != 4 {
		t.Errorf("wildcard dtype: %d %d", st, ld)
	}
	if st, ld := allowedSpill([]spillAllowance{{"f", "*", "sm_80", 8, 4}}, "f", "bf16", "sm_90"); st != 0 || ld != 0 {
		t.Errorf("other arch: %d %d", st, ld)
	}
	bad := filepath.Join(t.TempDir(), "spills.txt")
	if err := os.WriteFile(bad, []byte("pb_add fp16 sm_80 four 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSpillAllowlist(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad line: %v", err)
	}
}

// The gate finds what it is for, on a probe kernel with three planted
// faults: a parameter list the Go side does not launch, static plus
// dynamic shared memory beyond 48 KiB without the opt-in, and a compiler
// warning; and a spill beyond an allowance of zero when registers are
// capped.
func TestKernelCheckCatchesPlantedFaults(t *testing.T) {
	rtc, err := loadNVRTC() // the backend's own loader (and binding, kept for the process)
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	src := `extern "C" __global__ void pb_probe(float* x, int n) {
	__shared__ float s[10240]; // 40 KiB
	int unused;
	s[threadIdx.x] = x[threadIdx.x];
	__syncthreads();
	if ((int)threadIdx.x < n) x[threadIdx.x] = s[(threadIdx.x + 1) % 10240];
}
`
	u := gateUnit{name: "probe.cu", src: src, sigs: map[string]string{"pb_probe": "ppi"},
		bounds: map[string]launchBound{"pb_probe": {threads: 256, dynSmem: 16 << 10}}}
	res := gateCompile(rtc, u, dtypes["fp32"], gateArchs[0], nil)
	all := strings.Join(res.problems, "\n")
	for _, want := range []string{
		"pb_probe parameter 0 is pu", // float* where the Go side passes two pointers and an int: 2 params vs 3
		"needs 40960 bytes of static and 16384 of dynamic shared memory, beyond 49152",
		"compiler warning:",
	} {
		if want == "pb_probe parameter 0 is pu" {
			want = "pb_probe takes 2 parameters, the Go side launches 3"
		}
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}

// kernelCheckOnly skips a test that compiles kernels with g++ or NVRTC
// (tens of seconds on two cores) unless PARTBENCH_KERNEL_CHECK=1, which
// make kernel-check sets: make test runs them there once, not again in
// go test ./... .
func kernelCheckOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("PARTBENCH_KERNEL_CHECK") != "1" {
		t.Skip("a kernel-check test: run make kernel-check (or set PARTBENCH_KERNEL_CHECK=1)")
	}
}

// A Hopper-only instruction compiles for sm_90a and not for sm_90, and a
// file naming one is compiled for sm_90a by the gate.
func TestKernelCheckSm90a(t *testing.T) {
	src := `extern "C" __global__ void pb_probe(float* x) {
	asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
	x[threadIdx.x] = 1.0f;
}
`
	if !hopperOnly.MatchString(src) || !hopperOnly.MatchString("// kernel-check: sm_90a") || hopperOnly.MatchString(`#include "pb_tc.cuh"`) {
		t.Fatal("hopperOnly does not tell Hopper-only files")
	}
	rtc, err := loadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	if major, minor, _ := rtc.Version(); major < 12 {
		t.Skipf("NVRTC %d.%d cannot target sm_90a", major, minor)
	}
	u := gateUnit{name: "probe.cu", src: src, sigs: map[string]string{"pb_probe": "p"}, bounds: map[string]launchBound{"pb_probe": {threads: 128}}}
	if res := gateCompile(rtc, u, dtypes["fp32"], gateArchs[2], nil); len(res.problems) > 0 {
		t.Errorf("sm_90a: %v", res.problems)
	}
	if res := gateCompile(rtc, u, dtypes["fp32"], gateArchs[1], nil); len(res.problems) == 0 {
		t.Error("wgmma compiled for sm_90 (not arch-specific)")
	}
}

// extraSigs are the parameter lists the backend launches the kernels of
// flash.cu and the second module (split-KV, fused norms, RoPE table,
// weight generator) with.
func extraSigs() map[string]string {
	sigs := map[string]string{"pb_splitkv_merge": splitKVMergeSig, "pb_rope_kv_table": ropeTableSig,
		"pb_add_rmsnorm": addRMSNormSig, "pb_add_layernorm": addLayerNormSig, "pb_gen": genSig, "pb_causal_softmax": causalSoftmaxSig,
		"pb_bias_act": biasActSig}
	for _, v := range []int{1, 2, 4, 8} {
		sigs[fmt.Sprintf("pb_splitkv_partial_v%d", v)] = splitKVPartialSig
		sigs[fmt.Sprintf("pb_splitkv_v%d", v)] = splitKVOneSig
	}
	for _, fk := range flashAllKernels() {
		sigs[fk.name()] = flashKernelSig
	}
	for _, mm := range gemvVariants {
		sigs[gemvKernelName(mm)] = gemvSig
	}
	return sigs
}

// extraGateUnits are flash.cu (no kernel in fp32: the m16n8k16 mma has no
// fp32 form) and the backend's second module, held to extraSigs and
// extraLaunch as the first module is to kernelSigs and kernelLaunch.
func extraGateUnits() []gateUnit {
	sigs, bounds := extraSigs(), extraLaunch
	return []gateUnit{{name: "flash.cu", src: flashModule(), sigs: sigs, bounds: bounds},
		{name: "partbench_extra.cu", src: extraSource(), sigs: sigs, bounds: bounds}}
}

// Every kernel of the extra modules has a signature and a bound, and each
// bound's kernel has a signature (the gate holds compiled entries to both).
func TestExtraKernelsRegistered(t *testing.T) {
	sigs := extraSigs()
	for n := range extraLaunch {
		if _, ok := sigs[n]; !ok {
			t.Errorf("%s has a launch bound and no signature", n)
		}
	}
	for n := range sigs {
		if _, ok := extraLaunch[n]; !ok {
			t.Errorf("%s has a signature and no launch bound", n)
		}
	}
}
