package hostemu

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/partbench/partbench/exec/cuda/kernels"
)

//go:embed prelude.h
var prelude string

// Prelude is the text of prelude.h.
func Prelude() string { return prelude }

// Kernel is an entry point the program can launch and its parameter list,
// one letter per parameter: p a pointer, i an int, f a float, u an
// unsigned long long (exec/cuda's kernelSigs).
type Kernel struct {
	Name, Sig string
}

// Options are what Build compiles.
type Options struct {
	// Name is the kernel file's name in messages ("attention.cu").
	Name string
	// Source is the .cu text; its `#include "x.cuh"` lines find the
	// headers of exec/cuda/kernels.
	Source string
	// Defines are -D options (-DPB_F16).
	Defines []string
	// Kernels are the entry points to make launchable.
	Kernels []Kernel
	// ASan builds with -fsanitize=address: a global-memory access out of
	// its buffer stops the run.
	ASan bool
}

// Compiler is the C++ compiler: $CXX, else g++ on PATH.
func Compiler() (string, error) {
	if c := os.Getenv("CXX"); c != "" {
		p, err := exec.LookPath(c)
		if err != nil {
			return "", fmt.Errorf("hostemu: $CXX=%s: %w", c, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("g++")
	if err != nil {
		return "", fmt.Errorf("hostemu: no g++ on PATH and $CXX unset: %w", err)
	}
	return p, nil
}

// Program is a built harness binary.
type Program struct {
	bin, dir string
	kernels  map[string]Kernel
}

var sigLetter = regexp.MustCompile(`^[pifu]*$`)

// externShared is `extern __shared__ [__align__(n)] T name[];`, which the
// prelude cannot express as a macro: Build points it at the launch's
// dynamic shared memory instead.
var externShared = regexp.MustCompile(`extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_][\w\s]*?)\s+([A-Za-z_]\w*)\s*\[\s*\]\s*;`)

// RewriteExternShared is src with each extern __shared__ array declared as
// a pointer to the dynamic shared memory (the one change Build makes).
func RewriteExternShared(src string) string {
	return externShared.ReplaceAllString(src, "$1* $2 = ($1*)pb_emu_dynamic_smem();")
}

// Build writes the prelude, the kernel headers, the kernel source and a
// driver into dir and compiles them into one program.
func Build(ctx context.Context, dir string, o Options) (*Program, error) {
	cxx, err := Compiler()
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = "kernel.cu"
	}
	ks := map[string]Kernel{}
	for _, k := range o.Kernels {
		if !sigLetter.MatchString(k.Sig) || k.Name == "" {
			return nil, fmt.Errorf("hostemu: kernel %q: signature %q must be letters p, i, f, u", k.Name, k.Sig)
		}
		ks[k.Name] = k
	}
	write := func(name, text string) error { return os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644) }
	if err := write("prelude.h", prelude); err != nil {
		return nil, err
	}
	for _, h := range kernels.Headers() {
		text, err := fs.ReadFile(kernels.FS(), h)
		if err != nil {
			return nil, err
		}
		if err := write(h, string(text)); err != nil {
			return nil, err
		}
	}
	if err := write("kernel.cu", fmt.Sprintf("#line 1 %q\n", o.Name)+RewriteExternShared(o.Source)); err != nil {
		return nil, err
	}
	if err := write("driver.cpp", driver(o.Kernels)); err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "harness")
	args := []string{"-std=c++20", "-O1", "-pthread", "-I", dir, "-include", filepath.Join(dir, "prelude.h")}
	if o.ASan {
		args = append(args, "-fsanitize=address", "-fno-omit-frame-pointer")
	}
	args = append(args, o.Defines...)
	args = append(args, "-o", bin, filepath.Join(dir, "driver.cpp"))
	cmd := exec.CommandContext(ctx, cxx, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("hostemu: compiling %s (%s) with %s: %w\n%s", o.Name, strings.Join(o.Defines, " "), cxx, err, out)
	}
	return &Program{bin: bin, dir: dir, kernels: ks}, nil
}

// driver is the C++ main: it reads buffers and launches from the file in
// argv[1], runs the launches in order and writes the buffers to argv[2].
func driver(ks []Kernel) string {
	var b strings.Builder
	b.WriteString(`#include "kernel.cu"
#include <string>

struct pb_ptr {
	void* p;
	template <typename T> operator T*() const { return (T*)p; }
};
struct pb_in {
	FILE* f;
	template <typename T> T get() {
		T v;
		if (std::fread(&v, sizeof v, 1, f) != 1) pb_emu_fail("driver: input file ends early");
		return v;
	}
};

int main(int argc, char** argv) {
	if (argc != 3) { std::fprintf(stderr, "usage: harness IN OUT\n"); return 2; }
	FILE* f = std::fopen(argv[1], "rb");
	if (!f) { std::perror(argv[1]); return 2; }
	pb_in in{f};
	if (in.get<unsigned long long>() != 0x31554d4542504dull) pb_emu_fail("driver: not a harness input file");
	const unsigned int nbuf = in.get<unsigned int>();
	std::vector<unsigned char*> bufs(nbuf);
	std::vector<unsigned long long> sizes(nbuf);
	for (unsigned int i = 0; i < nbuf; i++) {
		sizes[i] = in.get<unsigned long long>();
		// 256-byte aligned as cuMemAlloc's, and exactly as long as asked, so
		// AddressSanitizer (Options.ASan) sees an access past the end.
		void* p = nullptr;
		if (posix_memalign(&p, 256, sizes[i] ? sizes[i] : 1) != 0) pb_emu_fail("driver: out of memory");
		bufs[i] = (unsigned char*)p;
		if (sizes[i] && std::fread(bufs[i], 1, sizes[i], f) != sizes[i]) pb_emu_fail("driver: buffer ends early");
	}
	const unsigned int nl = in.get<unsigned int>();
	for (unsigned int l = 0; l < nl; l++) {
		const unsigned int nlen = in.get<unsigned int>();
		std::string name(nlen, ' ');
		if (std::fread(name.data(), 1, nlen, f) != nlen) pb_emu_fail("driver: name ends early");
		unsigned int g[3], bl[3];
		for (int i = 0; i < 3; i++) g[i] = in.get<unsigned int>();
		for (int i = 0; i < 3; i++) bl[i] = in.get<unsigned int>();
		const unsigned long long dyn = in.get<unsigned long long>();
		const unsigned int na = in.get<unsigned int>();
		std::vector<unsigned long long> raw(na);
		for (unsigned int a = 0; a < na; a++) {
			const unsigned char kind = in.get<unsigned char>();
			if (kind == 'p') {
				const unsigned int bi = in.get<unsigned int>();
				const unsigned long long off = in.get<unsigned long long>();
				if (bi >= nbuf) pb_emu_fail("driver: pointer to a buffer that does not exist");
				raw[a] = (unsigned long long)(bufs[bi] + off);
			} else {
				raw[a] = in.get<unsigned long long>();
			}
		}
		auto P = [&](int i) { return pb_ptr{(void*)raw[i]}; };
		auto I = [&](int i) { return (int)(unsigned int)raw[i]; };
		auto F = [&](int i) { const unsigned int u = (unsigned int)raw[i]; float x; std::memcpy(&x, &u, 4); return x; };
		auto U = [&](int i) { return (unsigned long long)raw[i]; };
		(void)P; (void)I; (void)F; (void)U;
		const dim3 grid(g[0], g[1], g[2]), block(bl[0], bl[1], bl[2]);
`)
	for _, k := range ks {
		fmt.Fprintf(&b, "\t\tif (name == %q) {\n", k.Name)
		fmt.Fprintf(&b, "\t\t\tif (na != %d) pb_emu_fail(\"driver: %s takes %d arguments\");\n", len(k.Sig), k.Name, len(k.Sig))
		var call []string
		for i, c := range k.Sig {
			call = append(call, fmt.Sprintf("%c(%d)", c-'a'+'A', i))
		}
		fmt.Fprintf(&b, "\t\t\tpb_emu_launch(grid, block, dyn, [&] { %s(%s); });\n\t\t\tcontinue;\n\t\t}\n", k.Name, strings.Join(call, ", "))
	}
	b.WriteString(`		std::fprintf(stderr, "hostemu: no kernel %s in this program\n", name.c_str());
		return 3;
	}
	std::fclose(f);
	FILE* o = std::fopen(argv[2], "wb");
	if (!o) { std::perror(argv[2]); return 2; }
	for (unsigned int i = 0; i < nbuf; i++) {
		if (std::fwrite(bufs[i], 1, sizes[i], o) != sizes[i]) { std::perror(argv[2]); return 2; }
		std::free(bufs[i]);
	}
	return std::fclose(o) == 0 ? 0 : 2;
}
`)
	return b.String()
}

// Arg is one kernel argument.
type Arg struct {
	kind byte
	buf  int
	off  uint64
	val  uint64
}

// Ptr is a pointer off bytes into buffer buf.
func Ptr(buf, off int) Arg { return Arg{kind: 'p', buf: buf, off: uint64(off)} }

// I32 is an int.
func I32(v int) Arg { return Arg{kind: 'i', val: uint64(uint32(int32(v)))} }

// F32 is a float.
func F32(v float32) Arg { return Arg{kind: 'f', val: uint64(math.Float32bits(v))} }

// U64 is an unsigned long long.
func U64(v uint64) Arg { return Arg{kind: 'u', val: v} }

// Dim is a grid or block size.
type Dim struct{ X, Y, Z int }

// D1 is {x, 1, 1}; D2 is {x, y, 1}.
func D1(x int) Dim    { return Dim{x, 1, 1} }
func D2(x, y int) Dim { return Dim{x, y, 1} }

// Launch is one kernel launch.
type Launch struct {
	Kernel      string
	Grid, Block Dim
	DynSmem     int // bytes of dynamic shared memory
	Args        []Arg
}

// checkLaunch refuses a launch of a kernel not in ks, or whose arguments
// differ from its signature or point outside bufs.
func checkLaunch(ks map[string]Kernel, bufs [][]byte, l Launch) error {
	k, ok := ks[l.Kernel]
	if !ok {
		return fmt.Errorf("hostemu: launch of %s, which the program was not built with", l.Kernel)
	}
	sig := make([]byte, len(l.Args))
	for i, a := range l.Args {
		sig[i] = a.kind
		if a.kind == 'p' && (a.buf < 0 || a.buf >= len(bufs) || a.off > uint64(len(bufs[a.buf]))) {
			return fmt.Errorf("hostemu: %s argument %d points at buffer %d offset %d, outside the %d buffers given", l.Kernel, i, a.buf, a.off, len(bufs))
		}
	}
	if string(sig) != k.Sig {
		return fmt.Errorf("hostemu: launch %s with arguments %q, the kernel takes %q", l.Kernel, sig, k.Sig)
	}
	return nil
}

// Runner runs launches on buffers: a Program on CPU threads, or a Device.
type Runner interface {
	Run(ctx context.Context, bufs [][]byte, launches []Launch) ([][]byte, error)
}

var (
	_ Runner = (*Program)(nil)
	_ Runner = (*Device)(nil)
)

// Run copies bufs to the program, runs the launches in order and returns
// the buffers as the kernels left them. A failure carries the program's
// message (a deadlock, a warp exchange with a missing lane, an ASan
// report).
func (p *Program) Run(ctx context.Context, bufs [][]byte, launches []Launch) ([][]byte, error) {
	var in bytes.Buffer
	le := binary.LittleEndian
	put := func(v any) { _ = binary.Write(&in, le, v) }
	put(uint64(0x31554d4542504d)) // "MPBEMU1"
	put(uint32(len(bufs)))
	for _, b := range bufs {
		put(uint64(len(b)))
		in.Write(b)
	}
	put(uint32(len(launches)))
	for _, l := range launches {
		if err := checkLaunch(p.kernels, bufs, l); err != nil {
			return nil, err
		}
		put(uint32(len(l.Kernel)))
		in.WriteString(l.Kernel)
		for _, d := range []Dim{l.Grid, l.Block} {
			put([3]uint32{uint32(d.X), uint32(d.Y), uint32(d.Z)})
		}
		put(uint64(l.DynSmem))
		put(uint32(len(l.Args)))
		for _, a := range l.Args {
			in.WriteByte(a.kind)
			if a.kind == 'p' {
				put(uint32(a.buf))
				put(a.off)
			} else {
				put(a.val)
			}
		}
	}
	dir, err := os.MkdirTemp(p.dir, "run")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	inPath, outPath := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.WriteFile(inPath, in.Bytes(), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, p.bin, inPath, outPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("hostemu: run stopped: %w\n%s", ctx.Err(), stderr.String())
		}
		return nil, fmt.Errorf("hostemu: run failed: %w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		return nil, err
	}
	res := make([][]byte, len(bufs))
	for i, b := range bufs {
		if len(out) < len(b) {
			return nil, errors.New("hostemu: the program returned fewer bytes than it was given")
		}
		res[i], out = out[:len(b):len(b)], out[len(b):]
	}
	return res, nil
}
