package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/partbench/partbench/cgo/dl"
)

// NVRTC is the loaded CUDA runtime compiler.
type NVRTC struct {
	dl       *dl.Library
	builtins []*dl.Library // libnvrtc-builtins from libnvrtc's own folder
	c        rtcAPI
	closed   sync.Once
}

// LoadNVRTC finds NVRTC (dl.NVRTC: libnvrtc.so.13, .12, .11.2 in
// $PARTBENCH_NVRTC_LIB, LD_LIBRARY_PATH, $CUDA_HOME, the system loader,
// partbench's cache folder, the nvidia-cuda-nvrtc wheels) and binds it
// (LoadNVRTCFrom).
func LoadNVRTC() (*NVRTC, error) {
	lib, err := dl.Find(dl.NVRTC())
	if err != nil {
		return nil, fmt.Errorf("nvrtc: %w", err)
	}
	n, err := LoadNVRTCFrom(lib)
	if err != nil {
		lib.Close()
		return nil, err
	}
	return n, nil
}

// LoadNVRTCFrom binds an already opened NVRTC (the test seam). On success
// the NVRTC owns lib. It first loads libnvrtc-builtins from libnvrtc's own
// folder, where there is one: libnvrtc opens it by soname at its first
// compilation, which fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE when
// that folder is not on the loader's path, and the loader reuses a library
// already loaded under the soname.
func LoadNVRTCFrom(lib *dl.Library) (*NVRTC, error) {
	builtins, err := openBuiltins(lib.File())
	if err != nil {
		return nil, err
	}
	c, err := bindNVRTC(lib)
	if err != nil {
		closeAll(builtins)
		return nil, err
	}
	return &NVRTC{dl: lib, builtins: builtins, c: c}, nil
}

// builtinsName is a libnvrtc-builtins soname: libnvrtc-builtins.so.MAJOR.MINOR.
var builtinsName = regexp.MustCompile(`^libnvrtc-builtins\.so\.(\d+)\.\d+$`)

// nvrtcMajor is the major version in libnvrtc's file name (libnvrtc.so.12,
// libnvrtc.so.11.2, libnvrtc.so.12.4.127).
var nvrtcMajor = regexp.MustCompile(`^libnvrtc\.so\.(\d+)`)

// openBuiltins opens every libnvrtc-builtins.so.MAJOR.MINOR beside the
// libnvrtc at path whose MAJOR is libnvrtc's, newest first (none is not an
// error: the builtins may be on the loader's path).
func openBuiltins(path string) ([]*dl.Library, error) {
	m := nvrtcMajor.FindStringSubmatch(filepath.Base(path))
	if m == nil || !filepath.IsAbs(path) {
		return nil, nil
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, nil
	}
	var names []string
	for _, e := range entries {
		if b := builtinsName.FindStringSubmatch(e.Name()); b != nil && b[1] == m[1] {
			names = append(names, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	var libs []*dl.Library
	for _, name := range names {
		b, err := dl.Open(filepath.Join(filepath.Dir(path), name), dl.Now|dl.Local)
		if err != nil {
			closeAll(libs)
			return nil, fmt.Errorf("nvrtc: loading %s beside %s: %w", name, path, err)
		}
		libs = append(libs, b)
	}
	return libs, nil
}

func closeAll(libs []*dl.Library) {
	for _, l := range libs {
		l.Close()
	}
}

// Path is the file the library was loaded from.
func (n *NVRTC) Path() string { return n.dl.File() }

// Close releases the symbol table and closes the library. Closing twice
// does nothing.
func (n *NVRTC) Close() error {
	var err error
	n.closed.Do(func() {
		n.c.free()
		err = n.dl.Close()
		closeAll(n.builtins)
	})
	return err
}

func (n *NVRTC) fail(call string, r NVRTCResult) error {
	return callError("nvrtc", call, r, "nvrtcGetErrorString", n.c.errorString(r))
}

// Version is the compiler's CUDA version (nvrtcVersion).
func (n *NVRTC) Version() (major, minor int, err error) {
	major, minor, r := n.c.version()
	if r != NVRTCSuccess {
		return 0, 0, n.fail("nvrtcVersion", r)
	}
	return major, minor, nil
}

// HasCUBIN reports whether the compiler can return a cubin (NVRTC ≥ 11.1).
func (n *NVRTC) HasCUBIN() bool { return n.c.hasCUBIN() }

// ArchOption is the --gpu-architecture option for a compute capability:
// "compute_90" (virtual: PTX the driver JIT-compiles, which needs a driver
// at least as new as NVRTC) or "sm_90" (real: a cubin for exactly that
// architecture, loaded without JIT).
func ArchOption(major, minor int, cubin bool) string {
	if cubin {
		return fmt.Sprintf("--gpu-architecture=sm_%d%d", major, minor)
	}
	return fmt.Sprintf("--gpu-architecture=compute_%d%d", major, minor)
}

// ArchSpecificOption is ArchOption for the architecture-specific target
// of compute capability major.minor: "sm_90a" (real) or "compute_90a"
// (virtual). Hopper-only instructions (wgmma, setmaxnreg) compile only for
// it, and its code runs on exactly that architecture.
func ArchSpecificOption(major, minor int, cubin bool) string {
	return ArchOption(major, minor, cubin) + "a"
}

// Compiled is NVRTC's output.
type Compiled struct {
	// Image is the PTX text (with its terminating NUL) or the cubin, ready
	// for (*Driver).LoadModule.
	Image []byte
	// CUBIN reports which: a cubin when the options named a real
	// architecture (sm_XX) and the library has nvrtcGetCUBIN.
	CUBIN bool
	// Log is the compiler's log (warnings; with --ptxas-options=-v the
	// registers, shared memory and spills of each kernel), possibly empty.
	Log string
	// PTX is the PTX text beside a cubin (nil when Image is the PTX).
	PTX []byte
}

// Compile compiles CUDA C++ source src (name is used in messages) with
// the given options (ArchOption, -D defines, …). A failed compilation
// returns an error carrying the compiler's log.
func (n *NVRTC) Compile(src, name string, opts ...string) (Compiled, error) {
	real := false
	for _, o := range opts {
		if strings.Contains(o, "=sm_") || strings.HasPrefix(o, "-arch=sm_") {
			real = true
		}
	}
	if real && !n.c.hasCUBIN() {
		return Compiled{}, fmt.Errorf("nvrtc: %s lacks nvrtcGetCUBIN (NVRTC 11.1 or newer): compile for a virtual architecture (compute_XX) instead", n.Path())
	}
	prog, r := n.c.createProgram(src, name)
	if r != NVRTCSuccess {
		return Compiled{}, n.fail("nvrtcCreateProgram", r)
	}
	defer n.c.destroyProgram(prog)
	cr := n.c.compileProgram(prog, opts)
	log, lr := n.c.programLog(prog)
	if cr != NVRTCSuccess {
		err := n.fail(fmt.Sprintf("nvrtcCompileProgram(%s, %s)", name, strings.Join(opts, " ")), cr)
		if lr == NVRTCSuccess && strings.TrimSpace(log) != "" {
			return Compiled{Log: log}, fmt.Errorf("%w\ncompiler log:\n%s", err, strings.TrimSpace(log))
		}
		return Compiled{Log: log}, err
	}
	out := Compiled{Log: log}
	if real {
		img, r := n.c.cubin(prog)
		if r != NVRTCSuccess {
			return out, n.fail("nvrtcGetCUBIN", r)
		}
		out.Image, out.CUBIN = img, true
		if ptx, r := n.c.ptx(prog); r == NVRTCSuccess {
			out.PTX = ptx
		}
		return out, nil
	}
	img, r := n.c.ptx(prog)
	if r != NVRTCSuccess {
		return out, n.fail("nvrtcGetPTX", r)
	}
	out.Image = img
	return out, nil
}
