package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/exec/cuda/hostemu"
	kernelsrc "github.com/partbench/partbench/exec/cuda/kernels"
)

// The backend's kernels, compiled from kernelSource (mainModule) with g++ behind the
// host-emulation prelude, run on small shapes against float64 references
// (docs/numerics.md states the tolerances and the harness's semantics).
// The launch shapes are the ones ops.go uses.

// emuTol is the bound on |got − want| / max(1, |want|) per element type:
// twice the storage rounding (half an ulp: 2^−24, 2^−11, 2^−8) plus fp32
// arithmetic, with room. docs/numerics.md quotes it.
var emuTol = map[string]float64{"fp32": 1e-6, "fp16": 1.5e-3, "bf16": 1.2e-2}

// emuKernels are the kernels the backend launches whose names start with
// one of prefixes (all without), with their signatures.
func emuKernels(prefixes ...string) []hostemu.Kernel {
	var ks []hostemu.Kernel
	for _, n := range kernelNames {
		keep := len(prefixes) == 0
		for _, p := range prefixes {
			keep = keep || strings.HasPrefix(n, p)
		}
		if keep {
			ks = append(ks, hostemu.Kernel{Name: n, Sig: kernelSigs[n]})
		}
	}
	return ks
}

func buildEmu(t *testing.T, dt dtype, name, src string, asan bool, only ...string) *hostemu.Program {
	t.Helper()
	if _, err := hostemu.Compiler(); err != nil {
		t.Skipf("no C++ compiler for the host-emulation harness: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := hostemu.Build(ctx, t.TempDir(), hostemu.Options{Name: name, Source: src, Defines: []string{dt.define}, Kernels: emuKernels(only...), ASan: asan})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func moduleSource(t *testing.T) string {
	t.Helper()
	src, err := kernelsrc.Module(mainModule...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// emu is one dtype's program and the helpers of its tests.
type emu struct {
	t  *testing.T
	p  hostemu.Runner
	dt dtype
	r  *rand.Rand
}

// run launches and returns the buffers afterwards.
func (e *emu) run(bufs [][]byte, ls ...hostemu.Launch) [][]byte {
	e.t.Helper()
	out, err := e.runErr(bufs, ls...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *emu) runErr(bufs [][]byte, ls ...hostemu.Launch) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return e.p.Run(ctx, bufs, ls)
}

// vals are n values uniform in [−a, a), rounded to the element type.
func (e *emu) vals(n int, a float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = e.dt.round(float32((e.r.Float64()*2 - 1) * a))
	}
	return v
}

func i32bytes(v ...int) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(x)))
	}
	return b
}

func i32s(b []byte) []int {
	out := make([]int, len(b)/4)
	for i := range out {
		out[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

func f32enc(v []float32) []byte { return dtypes["fp32"].encode(v) }
func f32dec(b []byte) []float32 { return dtypes["fp32"].decode(b) }

// maxErr is max |got − want| / max(1, |want|), and where.
func maxErr(got []float32, want []float64) (float64, int) {
	worst, at := 0.0, -1
	for i := range want {
		d := math.Abs(float64(got[i])-want[i]) / math.Max(1, math.Abs(want[i]))
		if math.IsNaN(float64(got[i])) != math.IsNaN(want[i]) {
			d = math.Inf(1)
		}
		if d > worst || at < 0 {
			worst, at = d, i
		}
	}
	return worst, at
}

// check fails when got is beyond the dtype's tolerance and logs the error.
func (e *emu) check(what string, got []float32, want []float64) float64 {
	e.t.Helper()
	if len(got) != len(want) {
		e.t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	err, at := maxErr(got, want)
	tol := emuTol[e.dt.name]
	e.t.Logf("%s %s: max error %.3g (tolerance %g)", e.dt.name, what, err, tol)
	if err > tol {
		e.t.Errorf("%s %s: element %d = %g, want %g (error %.3g > %g)", e.dt.name, what, at, got[at], want[at], err, tol)
	}
	return err
}

func TestHostEmulatedKernels(t *testing.T) {
	kernelCheckOnly(t)
	src := moduleSource(t)
	for _, name := range []string{"fp32", "fp16", "bf16"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dt := dtypes[name]
			// fp32 runs under AddressSanitizer: a kernel's access past its
			// buffer stops the run (the CPU's memcheck).
			e := &emu{t: t, p: buildEmu(t, dt, "kernels.Module", src, name == "fp32"), dt: dt, r: rand.New(rand.NewSource(7))}
			e.all(t)
		})
	}
}

// The same launches and float64 references on a GPU (device 0, the same
// source compiled by NVRTC): what the harness proves on CPUs, held on the
// device.
func TestRealGPUKernelsAgainstFloat64(t *testing.T) {
	src := moduleSource(t)
	for _, name := range []string{"fp32", "fp16", "bf16"} {
		t.Run(name, func(t *testing.T) {
			dt := dtypes[name]
			d, err := hostemu.NewDevice(hostemu.Options{Name: "kernels.Module", Source: src, Defines: []string{dt.define}, Kernels: emuKernels()})
			if errors.Is(err, hostemu.ErrUnavailable) {
				t.Skipf("%v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			t.Logf("device image: %s", d.What)
			e := &emu{t: t, p: d, dt: dt, r: rand.New(rand.NewSource(7))}
			e.all(t)
		})
	}
}

// all runs every kernel's checks as subtests of t.
func (e *emu) all(t *testing.T) {
	t.Run("norms", func(t *testing.T) { e.t = t; e.norms() })
	t.Run("elementwise", func(t *testing.T) { e.t = t; e.elementwise() })
	t.Run("rope_kv", func(t *testing.T) { e.t = t; e.ropeKV() })
	t.Run("attention", func(t *testing.T) {
		e.t = t
		for _, c := range attnCases {
			if err := e.attention(c, true); err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("tokens", func(t *testing.T) { e.t = t; e.tokens() })
	t.Run("argmax", func(t *testing.T) { e.t = t; e.argmax() })
}

// norms: RMSNorm and LayerNorm of the last of every q rows (q = 2), H not
// a multiple of the block: 200 (a multiple of the 16-byte vector: 25 or
// 50 vectors over 256 threads) and 203 (one element at a time).
func (e *emu) norms() {
	for _, H := range []int{200, 203} {
		e.normsH(H)
	}
}

func (e *emu) normsH(H int) {
	const R, q, eps = 3, 2, 1e-5
	x, w, b := e.vals(R*q*H, 2), e.vals(H, 1.5), e.vals(H, 0.5)
	out := e.run([][]byte{e.dt.encode(x), make([]byte, R*H*e.dt.bytes), e.dt.encode(w), e.dt.encode(b)},
		hostemu.Launch{Kernel: "pb_rmsnorm", Grid: hostemu.D1(R), Block: hostemu.D1(rowThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.I32(q), hostemu.I32(H), hostemu.F32(eps)}})
	want := make([]float64, R*H)
	for r := 0; r < R; r++ {
		row := x[(r*q+q-1)*H:][:H]
		ss := 0.0
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(H)+eps)
		for c := range row {
			want[r*H+c] = float64(row[c]) * inv * float64(w[c])
		}
	}
	e.check(fmt.Sprintf("pb_rmsnorm H=%d", H), e.dt.decode(out[1]), want)

	out = e.run([][]byte{e.dt.encode(x), make([]byte, R*H*e.dt.bytes), e.dt.encode(w), e.dt.encode(b)},
		hostemu.Launch{Kernel: "pb_layernorm", Grid: hostemu.D1(R), Block: hostemu.D1(rowThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0), hostemu.I32(q), hostemu.I32(H), hostemu.F32(eps)}})
	for r := 0; r < R; r++ {
		row := x[(r*q+q-1)*H:][:H]
		mean, vr := 0.0, 0.0
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(H)
		for _, v := range row {
			vr += (float64(v) - mean) * (float64(v) - mean)
		}
		inv := 1 / math.Sqrt(vr/float64(H)+eps)
		for c := range row {
			want[r*H+c] = (float64(row[c])-mean)*inv*float64(w[c]) + float64(b[c])
		}
	}
	e.check(fmt.Sprintf("pb_layernorm H=%d", H), e.dt.decode(out[1]), want)
}

// elementwise: bias, residual add, position add, both activations, last rows.
func (e *emu) elementwise() {
	const rows, n = 5, 70
	x, y := e.vals(rows*n, 3), e.vals(rows*n, 3)
	bias := e.vals(n, 1)
	out := e.run([][]byte{e.dt.encode(x), e.dt.encode(bias)},
		hostemu.Launch{Kernel: "pb_bias", Grid: hostemu.D1(flatBlocks(rows * n)), Block: hostemu.D1(flatThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(rows), hostemu.I32(n)}})
	want := make([]float64, rows*n)
	for k := range want {
		want[k] = float64(x[k]) + float64(bias[k%n])
	}
	e.check("pb_bias", e.dt.decode(out[0]), want)

	out = e.run([][]byte{e.dt.encode(x), e.dt.encode(y)},
		hostemu.Launch{Kernel: "pb_add", Grid: hostemu.D1(flatBlocks(rows * n)), Block: hostemu.D1(flatThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(rows * n)}})
	for k := range want {
		want[k] = float64(x[k]) + float64(y[k])
	}
	e.check("pb_add", e.dt.decode(out[0]), want)

	// pos_add: q = 5 rows per sequence at positions 3..7 of a 10-row table.
	const q, p0 = 5, 3
	pe := e.vals(10*n, 1)
	out = e.run([][]byte{e.dt.encode(x), e.dt.encode(pe), i32bytes(p0)},
		hostemu.Launch{Kernel: "pb_pos_add", Grid: hostemu.D1(rows), Block: hostemu.D1(rowThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.I32(q), hostemu.I32(n)}})
	for r := 0; r < rows; r++ {
		for c := 0; c < n; c++ {
			want[r*n+c] = float64(x[r*n+c]) + float64(pe[(p0+r%q)*n+c])
		}
	}
	e.check("pb_pos_add", e.dt.decode(out[0]), want)

	// act: gated rows are [gate fl | up fl]; GELU reads rows of fl. fl 35
	// runs the one-element path, 40 (a multiple of 8 and 4) the vector path.
	for _, fl := range []int{35, 40} {
		e.act(rows, fl)
	}

	// last_rows copies exactly.
	out = e.run([][]byte{e.dt.encode(x), make([]byte, 1*n*e.dt.bytes)},
		hostemu.Launch{Kernel: "pb_last_rows", Grid: hostemu.D1(1), Block: hostemu.D1(rowThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(rows), hostemu.I32(n)}})
	if got, wantB := out[1], e.dt.encode(x[(rows-1)*n:]); string(got) != string(wantB) {
		e.t.Errorf("pb_last_rows: the last row is not copied bit for bit")
	}
}

// act runs pb_act gated and not over rows of fl against float64.
func (e *emu) act(rows, fl int) {
	u := e.vals(rows*2*fl, 4)
	for _, gated := range []int{1, 0} {
		out := e.run([][]byte{e.dt.encode(u), make([]byte, rows*fl*e.dt.bytes)},
			hostemu.Launch{Kernel: "pb_act", Grid: hostemu.D1(flatBlocks(rows * fl)), Block: hostemu.D1(flatThreads),
				Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(rows), hostemu.I32(fl), hostemu.I32(gated)}})
		w := make([]float64, rows*fl)
		for k := range w {
			r, c := k/fl, k%fl
			if gated == 1 {
				g, up := float64(u[r*2*fl+c]), float64(u[r*2*fl+fl+c])
				w[k] = g / (1 + math.Exp(-g)) * up
			} else {
				x := float64(u[k])
				w[k] = 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
			}
		}
		e.check(fmt.Sprintf("pb_act gated=%d fl=%d", gated, fl), e.dt.decode(out[1]), w)
	}
}

// ropeKV: two sequences (cache rows seq0 = 1, 2) of q = 3 at positions
// 4..6, hl = 4 query heads and kvl = 2 kv heads of hd = 8; base 10000.
func (e *emu) ropeKV() {
	const seqs, q, p0, seq0, hl, kvl, hd, context, base = 2, 3, 4, 1, 4, 2, 8, 9, 10000.0
	w := (hl + 2*kvl) * hd
	qkv := e.vals(seqs*q*w, 1)
	kvw := kvl * hd
	cacheBytes := (seq0 + seqs) * context * kvw * e.dt.bytes
	out := e.run([][]byte{e.dt.encode(qkv), make([]byte, cacheBytes), make([]byte, cacheBytes), i32bytes(p0)},
		hostemu.Launch{Kernel: "pb_rope_kv", Grid: hostemu.D1(seqs * q), Block: hostemu.D1(rowThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0),
				hostemu.I32(seq0), hostemu.I32(q), hostemu.I32(hl), hostemu.I32(kvl), hostemu.I32(hd), hostemu.I32(context), hostemu.F32(base)}})
	want := make([]float64, len(qkv))
	for i := range want {
		want[i] = float64(qkv[i])
	}
	for r := 0; r < seqs*q; r++ {
		p := p0 + r%q
		for head := 0; head < hl+kvl; head++ { // q heads, then k heads
			for i := 0; i < hd/2; i++ {
				at := r*w + head*hd + 2*i
				th := float64(p) * math.Pow(base, -float64(2*i)/hd)
				// The kernel rounds sin and cos to fp32 before rotating.
				s, c := float64(float32(math.Sin(th))), float64(float32(math.Cos(th)))
				x0, x1 := float64(qkv[at]), float64(qkv[at+1])
				want[at], want[at+1] = x0*c-x1*s, x0*s+x1*c
			}
		}
	}
	gotQKV := e.dt.decode(out[0])
	e.check("pb_rope_kv q,k", gotQKV, want)
	kc, vc := e.dt.decode(out[1]), e.dt.decode(out[2])
	for r := 0; r < seqs*q; r++ {
		at := ((seq0+r/q)*context + p0 + r%q) * kvw
		for c := 0; c < kvw; c++ {
			// The cache holds exactly what the kernel stored in the row.
			if kc[at+c] != gotQKV[r*w+hl*hd+c] || vc[at+c] != qkv[r*w+hl*hd+kvw+c] {
				e.t.Fatalf("pb_rope_kv: cache row of row %d element %d: k %g v %g, want %g %g", r, c, kc[at+c], vc[at+c], gotQKV[r*w+hl*hd+c], qkv[r*w+hl*hd+kvw+c])
			}
		}
	}
}

// attnCase is one attention launch: seqs sequences of q queries at
// positions p0.., hl query heads on kvl kv heads of hd, the variant V.
type attnCase struct {
	name                        string
	seqs, q, p0, hl, kvl, hd, v int
	bidir                       bool
}

// attnCases cover decode (q = 1) and prefill (q > 1), causal and
// bidirectional, grouped-query heads, every V, and more keys per key
// group than one (so the online softmax rescales: 256/(hd/V)/… groups).
var attnCases = []attnCase{
	{"decode v8 gqa", 2, 1, 70, 4, 2, 32, 8, false},
	{"prefill v4 causal", 2, 5, 60, 2, 1, 64, 4, false},
	{"prefill v2 bidir", 1, 4, 40, 2, 2, 32, 2, true},
	{"prefill v1 causal", 1, 3, 33, 2, 1, 16, 1, false},
	{"prefill from 0 v8", 1, 6, 0, 2, 1, 64, 8, false},
}

// attention runs one case and compares with float64 softmax attention;
// with strict it fails the test on a miss, else returns the miss as an
// error (the planted-bug test wants it).
func (e *emu) attention(c attnCase, strict bool) error {
	const seq0 = 1
	context := c.p0 + c.q + 2
	w := (c.hl + 2*c.kvl) * c.hd
	kvw := c.kvl * c.hd
	qkv := e.vals(c.seqs*c.q*w, 1)
	kc := e.vals((seq0+c.seqs)*context*kvw, 1)
	vc := e.vals((seq0+c.seqs)*context*kvw, 1)
	scale := float32(1 / math.Sqrt(float64(c.hd)))
	bidir := 0
	if c.bidir {
		bidir = 1
	}
	out, err := e.runErr([][]byte{e.dt.encode(qkv), make([]byte, c.seqs*c.q*c.hl*c.hd*e.dt.bytes), e.dt.encode(kc), e.dt.encode(vc), i32bytes(c.p0)},
		hostemu.Launch{Kernel: fmt.Sprintf("pb_attention_v%d", c.v), Grid: hostemu.D2(c.seqs*c.q, c.hl), Block: hostemu.D1(attnThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0), hostemu.Ptr(4, 0),
				hostemu.I32(seq0), hostemu.I32(c.q), hostemu.I32(c.hl), hostemu.I32(c.kvl), hostemu.I32(c.hd), hostemu.I32(context), hostemu.F32(scale), hostemu.I32(bidir)}})
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	want := make([]float64, c.seqs*c.q*c.hl*c.hd)
	for r := 0; r < c.seqs*c.q; r++ {
		i, j := r/c.q, r%c.q
		n := c.p0 + j + 1
		if c.bidir {
			n = c.p0 + c.q
		}
		for h := 0; h < c.hl; h++ {
			kvh := h / (c.hl / c.kvl)
			qv := qkv[r*w+h*c.hd:][:c.hd]
			s := make([]float64, n)
			m := math.Inf(-1)
			for t := 0; t < n; t++ {
				kv := kc[((seq0+i)*context+t)*kvw+kvh*c.hd:][:c.hd]
				for d := range qv {
					s[t] += float64(qv[d]) * float64(kv[d])
				}
				s[t] *= float64(scale)
				m = math.Max(m, s[t])
			}
			den := 0.0
			for t := range s {
				s[t] = math.Exp(s[t] - m)
				den += s[t]
			}
			for d := 0; d < c.hd; d++ {
				num := 0.0
				for t := 0; t < n; t++ {
					num += s[t] * float64(vc[((seq0+i)*context+t)*kvw+kvh*c.hd+d])
				}
				want[(r*c.hl+h)*c.hd+d] = num / den
			}
		}
	}
	got := e.dt.decode(out[1])
	if strict {
		e.check("pb_attention "+c.name, got, want)
		return nil
	}
	if m, at := maxErr(got, want); m > emuTol[e.dt.name] {
		return fmt.Errorf("%s: element %d = %g, want %g (error %.3g)", c.name, at, got[at], want[at], m)
	}
	return nil
}

// tokens: the prompt schedule, teacher forcing, embedding and synthetic
// inputs, checked bit for bit against the Go statements in hash.go (held
// against model.PromptToken and model.Uniform by hash_test.go).
func (e *emu) tokens() {
	base := keyBase(42, promptTensor)
	const seqs, q, seq0, prompt, vocab, p0 = 3, 4, 2, 6, 1000, 3
	tok := make([]float32, seqs*q)
	out := e.run([][]byte{f32enc(tok), i32bytes(p0)},
		hostemu.Launch{Kernel: "pb_prompt_tokens", Grid: hostemu.D1(flatBlocks(seqs * q)), Block: hostemu.D1(flatThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(seqs), hostemu.I32(q), hostemu.I32(seq0), hostemu.I32(prompt), hostemu.I32(vocab), hostemu.U64(base)}})
	got := f32dec(out[0])
	for r := range got {
		if want := promptToken(base, seq0+r/q, p0+r%q, vocab); got[r] != float32(want) {
			e.t.Errorf("pb_prompt_tokens row %d = %g, want %d", r, got[r], want)
		}
	}
	// Past the prompt the kernel leaves the tokens alone.
	out = e.run([][]byte{f32enc([]float32{-5}), i32bytes(prompt)},
		hostemu.Launch{Kernel: "pb_prompt_tokens", Grid: hostemu.D1(1), Block: hostemu.D1(flatThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(1), hostemu.I32(1), hostemu.I32(0), hostemu.I32(prompt), hostemu.I32(vocab), hostemu.U64(base)}})
	if g := f32dec(out[0])[0]; g != -5 {
		e.t.Errorf("pb_prompt_tokens past the prompt wrote %g", g)
	}

	out = e.run([][]byte{f32enc(make([]float32, seqs)), i32bytes(p0)},
		hostemu.Launch{Kernel: "pb_teacher", Grid: hostemu.D1(1), Block: hostemu.D1(flatThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(q), hostemu.I32(seqs), hostemu.I32(seq0), hostemu.I32(vocab), hostemu.U64(base)}})
	for i, g := range f32dec(out[0]) {
		if want := promptToken(base, seq0+i, p0+q, vocab); g != float32(want) {
			e.t.Errorf("pb_teacher seq %d = %g, want %d", i, g, want)
		}
	}

	// embed: this rank holds ids [10, 20) of a 30-id vocabulary; row 2's
	// id is another rank's (zeros), row 3's is not an id (reported, zeros).
	const H, vstart, vl, vocabE = 40, 10, 10, 30
	emb := e.vals(vl*H, 1)
	ids := []float32{12, 19, 25, 7.5}
	out = e.run([][]byte{f32enc(ids), make([]byte, len(ids)*H*e.dt.bytes), e.dt.encode(emb), i32bytes(0, 0)},
		hostemu.Launch{Kernel: "pb_embed", Grid: hostemu.D1(len(ids)), Block: hostemu.D1(rowThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.I32(H), hostemu.I32(vstart), hostemu.I32(vl), hostemu.I32(vocabE), hostemu.Ptr(3, 0)}})
	x := e.dt.decode(out[1])
	for r, id := range ids {
		for c := 0; c < H; c++ {
			want := float32(0)
			if r < 2 {
				want = emb[(int(id)-vstart)*H+c]
			}
			if x[r*H+c] != want {
				e.t.Fatalf("pb_embed row %d col %d = %g, want %g", r, c, x[r*H+c], want)
			}
		}
	}
	if ef := i32s(out[3]); ef[0] != 4 || uint32(ef[1]) != math.Float32bits(7.5) {
		e.t.Errorf("pb_embed error flag %v, want {4, bits of 7.5}", ef)
	}

	sbase := keyBase(42, syntheticTensor)
	sids := []float32{0, 17, 999}
	out = e.run([][]byte{f32enc(sids), make([]byte, len(sids)*H*e.dt.bytes), i32bytes(0, 0)},
		hostemu.Launch{Kernel: "pb_synthetic", Grid: hostemu.D1(len(sids)), Block: hostemu.D1(rowThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(H), hostemu.I32(vocab), hostemu.U64(sbase), hostemu.Ptr(2, 0)}})
	x = e.dt.decode(out[1])
	for r, id := range sids {
		for c := 0; c < H; c++ {
			if want := e.dt.round(syntheticAt(sbase, int(id), c)); x[r*H+c] != want {
				e.t.Fatalf("pb_synthetic id %g col %d = %g, want %g", id, c, x[r*H+c], want)
			}
		}
	}
}

// argmax over the gathered layout [T][seqs][vl]: T = 3 shards of vl = 700
// (2 100 padded ids, vocab 2 050); planted maxima, a tie (the first index
// wins), NaN (never wins).
func (e *emu) argmax() {
	const T, seqs, vl, vocab = 3, 4, 700, 2050
	logits := e.vals(T*seqs*vl, 1)
	at := func(i, v int) int { return ((v/vl)*seqs+i)*vl + v%vl }
	want := []int{1500, 3, 700, 2049}
	logits[at(0, 1500)] = 8
	logits[at(1, 3)], logits[at(1, 1800)] = 8, 8 // tie: 3 wins
	logits[at(2, 700)] = 8
	logits[at(2, 5)] = float32(math.NaN())
	logits[at(3, 2049)] = 8
	logits[at(3, 2060)] = 16 // a padded id (≥ vocab) never wins
	out := e.run([][]byte{e.dt.encode(logits), make([]byte, 4*seqs)},
		hostemu.Launch{Kernel: "pb_argmax", Grid: hostemu.D1(seqs), Block: hostemu.D1(argmaxThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(seqs), hostemu.I32(vl), hostemu.I32(vocab)}})
	if got := i32s(out[1]); fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Errorf("pb_argmax = %v, want %v", got, want)
	}
}

// plantBug returns src with old replaced by new exactly once; a test that
// no longer finds old fails, so the planted bugs follow the kernel.
func plantBug(t *testing.T, src, old, new string) string {
	t.Helper()
	if n := strings.Count(src, old); n != 1 {
		t.Fatalf("planted bug: %q occurs %d times in the kernel source, want once", old, n)
	}
	return strings.Replace(src, old, new, 1)
}

// A planted bug in the attention kernel must fail the float64 comparison:
// a causal mask that lets each query see the whole pass, and an online
// softmax that drops the rescale of its running sums.
func TestHostEmulationCatchesPlantedBugs(t *testing.T) {
	kernelCheckOnly(t)
	src, err := kernelsrc.Source("attention.cu") // the attention kernels alone: a quicker build
	if err != nil {
		t.Fatal(err)
	}
	dt := dtypes["fp32"]
	bugs := []struct{ name, old, new string }{
		{"causal mask sees the whole pass", "const int n = bidir ? *pos + q : *pos + j + 1;", "const int n = *pos + q;"},
		{"online softmax drops the rescale", "acc[e] = acc[e] * corr + p * vv[e];", "acc[e] = acc[e] + p * vv[e];"},
		{"the prefetched key never replaces the current one", "\t\tkr = kn;\n", "\n"},
		{"the prefetch runs one key behind", "pb_fetch<V>(vc + base + (size_t)(t + NG) * kvw, vn);", "pb_fetch<V>(vc + base + (size_t)(t + NG - 1) * kvw, vn);"},
	}
	for _, b := range bugs {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := &emu{t: t, p: buildEmu(t, dt, "attention.cu (planted bug)", plantBug(t, src, b.old, b.new), false, "pb_attention_"), dt: dt, r: rand.New(rand.NewSource(7))}
			var caught []string
			for _, c := range attnCases {
				if c.bidir {
					continue // bidirectional attention reads the whole pass by design
				}
				if err := e.attention(c, false); err != nil {
					caught = append(caught, err.Error())
				}
			}
			sort.Strings(caught)
			if len(caught) == 0 {
				t.Fatalf("the planted bug passed every attention case")
			}
			t.Logf("caught by %d cases, e.g. %s", len(caught), caught[0])
		})
	}
}

// roundProbe stores floats in the element type with the kernels' st().
const roundProbe = `#include "pb_common.cuh"
extern "C" __global__ void pb_round_probe(const float* in, elem* out, int n) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = st(in[i]);
}
`

// roundInputs are float32 values around every rounding decision: random
// bit patterns, every 16-bit value widened, the midpoints between
// neighbouring 16-bit values (ties to even) and one fp32 ulp either side,
// subnormals, overflow, ±0, ±Inf and NaN.
func roundInputs(dt dtype) []float32 {
	r := rand.New(rand.NewSource(3))
	var in []float32
	widen := f16ToF32
	if dt.name == "bf16" {
		widen = bf16ToF32
	}
	for h := 0; h < 1<<16; h++ {
		lo, hi := widen(uint16(h)), widen(uint16(h+1))
		in = append(in, lo)
		if h&0x7fff < 0x7c00 && h != 0x7fff && !math.IsInf(float64(hi), 0) && !math.IsNaN(float64(hi)) && (h>>15) == ((h+1)>>15) {
			mid := float32((float64(lo) + float64(hi)) / 2)
			in = append(in, mid, math.Nextafter32(mid, float32(math.Inf(1))), math.Nextafter32(mid, float32(math.Inf(-1))))
		}
	}
	for range 20000 {
		in = append(in, math.Float32frombits(r.Uint32()))
	}
	return append(in, 0, float32(math.Copysign(0, -1)), 65504, 65520, 65519.99, 1e-8, -1e-8, 3e-8, 6e-8,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3.4e38, -3.4e38)
}

// checkRounding holds the kernels' stores against the Go conversions the
// backend uploads with (half.go): bit for bit, NaN to a NaN.
func checkRounding(t *testing.T, p hostemu.Runner, dt dtype) {
	in := roundInputs(dt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := p.Run(ctx, [][]byte{f32enc(in), make([]byte, 2*len(in))}, []hostemu.Launch{{Kernel: "pb_round_probe",
		Grid: hostemu.D1(8), Block: hostemu.D1(flatThreads), Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.I32(len(in))}}}) // grid-stride: few blocks, each thread many values
	if err != nil {
		t.Fatal(err)
	}
	conv, isNaN := f32ToF16, func(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
	if dt.name == "bf16" {
		conv, isNaN = f32ToBF16, func(h uint16) bool { return h&0x7f80 == 0x7f80 && h&0x7f != 0 }
	}
	bad := 0
	for i, f := range in {
		got, want := binary.LittleEndian.Uint16(out[1][2*i:]), conv(f)
		if got != want && !(isNaN(got) && isNaN(want)) {
			if bad++; bad <= 5 {
				t.Errorf("%s: st(%g = %#08x) = %#04x, want %#04x", dt.name, f, math.Float32bits(f), got, want)
			}
		}
	}
	t.Logf("%s: %d values, %d differ", dt.name, len(in), bad)
}

// The harness's 16-bit stores (fp16 through g++'s _Float16, bf16 by bit
// arithmetic) round exactly as the Go conversions, on every 16-bit value,
// every tie and its neighbours, and random patterns.
func TestHostEmulatedRounding(t *testing.T) {
	kernelCheckOnly(t)
	for _, name := range []string{"fp16", "bf16"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dt := dtypes[name]
			if _, err := hostemu.Compiler(); err != nil {
				t.Skipf("no C++ compiler: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			p, err := hostemu.Build(ctx, t.TempDir(), hostemu.Options{Name: "round_probe.cu", Source: roundProbe, Defines: []string{dt.define},
				Kernels: []hostemu.Kernel{{Name: "pb_round_probe", Sig: "ppi"}}})
			if err != nil {
				t.Fatal(err)
			}
			checkRounding(t, p, dt)
		})
	}
}

// The device's stores (cvt.rn.f16.f32; the bf16 bit arithmetic) against
// the same Go conversions.
func TestRealGPURounding(t *testing.T) {
	for _, name := range []string{"fp16", "bf16"} {
		t.Run(name, func(t *testing.T) {
			dt := dtypes[name]
			d, err := hostemu.NewDevice(hostemu.Options{Name: "round_probe.cu", Source: roundProbe, Defines: []string{dt.define},
				Kernels: []hostemu.Kernel{{Name: "pb_round_probe", Sig: "ppi"}}})
			if errors.Is(err, hostemu.ErrUnavailable) {
				t.Skipf("%v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			checkRounding(t, d, dt)
		})
	}
}
