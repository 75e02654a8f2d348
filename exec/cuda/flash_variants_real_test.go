package cuda

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/partition"
)

// flashVariantRuns are the timed runs of each kernel (after 2 warm-up
// runs); the table gives their median.
const flashVariantRuns = 7

// causalPairs is the (query, key) pairs a causal prefill of q queries
// after past cached positions scores: query j sees past + j + 1 keys, so
// q·past + q(q+1)/2. The seed prefill: 2032·2033/2 = 2,065,528.
func causalPairs(q, past int) int64 { return int64(q)*int64(past) + int64(q)*int64(q+1)/2 }

// On a GPU: the seed prefill's attention (batch 16, 2032 prompt tokens,
// 32 heads of 128, MHA, causal) in fp16 and bf16, one layer: the rotary +
// KV-append kernel alone, then every flash variant at both query tiles
// alone, each timed with events around the launch (2 warm-up runs, the
// median of 7), beside its TFLOP/s at 4·B·H·d FLOPs per visible pair
// (16·32·128·4·2,065,528 = 541.4 GFLOP) and, for the rotary kernel, its
// GB/s: per row it reads the q, k, v of the row (3·4096·2 B) and writes
// the rotated q and k back and k and v to the cache (4·4096·2 B),
// 57,344 B, 1.864 GB over 32,512 rows. Each variant's output is held to
// the default kernel's at the default tile: the variants compute the same
// sums in the same order (bit for bit in the harness), and the two tiles
// differ only in which block computes a row, so the bound is the fp16
// tolerance of TestRealGPUBlasAttention, 6e-3 (bf16: u = 2⁻⁸, 8× fp16's:
// 5e-2), and the maximum difference is logged. It fails when a kernel
// fails, a time is missing or an output is beyond the bound.
func TestRealGPUFlashVariants(t *testing.T) {
	realGPU(t)
	plan := seed4Config(t, 16)
	var op *partition.Op
	prog := plan.Program(0, partition.Prefill)
	for i := range prog.Ops {
		if prog.Ops[i].Kind == partition.Attention && prog.Ops[i].Layer == 0 {
			op = &prog.Ops[i]
			break
		}
	}
	if op == nil {
		t.Fatal("the seed prefill has no attention op in layer 0")
	}
	for _, tc := range []struct {
		dt  string
		tol float64
	}{{"fp16", 6e-3}, {"bf16", 5e-2}} {
		flashVariantsTable(t, plan, op, tc.dt, tc.tol)
	}
}

// flashVariantsTable times op's rotary kernel and every flash variant in
// dtype dt and logs the table.
func flashVariantsTable(t *testing.T, plan *partition.Plan, op *partition.Op, dt string, tol float64) {
	ctx := context.Background()
	c, err := New(plan, 0, Options{DType: dt, NoTiming: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok, why := c.FlashAttention(); !ok {
		t.Fatalf("%s: flash attention is off: %s", dt, why)
	}
	unpin, err := c.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = c.loadAllFlashVariants()
	unpin()
	if err != nil {
		t.Fatalf("%s: %v", dt, err)
	}
	in := make([]float32, op.Rows*op.InWidth)
	for i := range in {
		in[i] = float32((i*7919)%401)/100 - 2
	}
	inBuf, err := c.Buffer(op.In, 0, len(in))
	if err != nil {
		t.Fatal(err)
	}
	if err := inBuf.(*Buffer).WriteF32(in); err != nil {
		t.Fatal(err)
	}
	outBuf, err := c.Buffer(op.Out, 0, op.Rows*op.OutWidth)
	if err != nil {
		t.Fatal(err)
	}
	// The op once as the backend runs it: position 0, the cache filled.
	if err := c.Exec(ctx, op, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	qkv := dbuf{p: inBuf.(*Buffer).ptr, n: len(in)}
	ao := dbuf{p: outBuf.(*Buffer).ptr, n: op.Rows * op.OutWidth}
	cache, st, seq0 := c.kv[op.Layer], c.mbs[op.Microbatch], op.Microbatch*op.Seqs
	timed := func(what string, launch func() error) float64 {
		unpin, err := c.enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer unpin()
		start, err := c.drv.NewEvent(cuda.EventDefault)
		if err != nil {
			t.Fatal(err)
		}
		defer start.Destroy()
		end, err := c.drv.NewEvent(cuda.EventDefault)
		if err != nil {
			t.Fatal(err)
		}
		defer end.Destroy()
		var ms []float64
		for r := 0; r < 2+flashVariantRuns; r++ {
			if err := start.Record(c.stream); err != nil {
				t.Fatal(err)
			}
			if err := launch(); err != nil {
				t.Fatalf("%s %s: %v", dt, what, err)
			}
			if err := end.Record(c.stream); err != nil {
				t.Fatal(err)
			}
			if err := end.Synchronize(); err != nil {
				t.Fatalf("%s %s: %v", dt, what, err)
			}
			e, err := cuda.ElapsedMS(start, end)
			if err != nil {
				t.Fatal(err)
			}
			if r >= 2 {
				ms = append(ms, float64(e))
			}
		}
		slices.Sort(ms)
		med := stat.Quantile(0.5, stat.Empirical, ms, nil)
		if !(med > 0) {
			t.Errorf("%s %s: median time %g ms", dt, what, med)
		}
		return med
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%-36s %9s %10s\n", "kernel", "ms", "TFLOP/s")
	// The rotary + KV-append kernel rotates q and k in place each run
	// (norms kept, values in range) and rewrites the same cache rows; the
	// flash kernels below all read the state it leaves.
	ropeMS := timed("rotary", func() error { return c.ropeKV(op, qkv, cache, st, seq0) })
	// Per row: q, k, v read ((hl + 2kvl)·hd), q and k written back
	// ((hl + kvl)·hd), k and v written to the cache (2kvl·hd).
	ropeBytes := float64((2*op.Heads+5*op.KVHeads)*op.HeadDim*c.dt.bytes) * float64(op.Rows)
	fmt.Fprintf(&b, "%-36s %9.3f %10s  (%.2f TB/s of %.3f GB)\n", "rotary+KV append", ropeMS, "-",
		ropeBytes/(ropeMS/1e3)/1e12, ropeBytes/1e9)
	flops := 4 * float64(op.Seqs*op.Heads*op.HeadDim) * float64(causalPairs(op.QLen, 0))
	defTile := flashTile(op.QLen, op.Seqs, op.Heads, c.info.SMs)
	// The output's bytes: compared as bytes first (266 MB at the seed
	// shape; the variants are expected bit for bit equal), decoded only
	// where they differ.
	read := func() []byte {
		raw := make([]byte, outBuf.(*Buffer).Bytes())
		if err := c.downloadInto(raw, outBuf.(*Buffer).ptr); err != nil {
			t.Fatal(err)
		}
		return raw
	}
	tiles := []int{defTile}
	for _, br := range flashBrs {
		if br != defTile {
			tiles = append(tiles, br)
		}
	}
	var ref []byte
	for _, br := range tiles {
		for _, v := range flashVariants {
			if !v.builtFor(br) {
				continue
			}
			name := flashVariantName(op.HeadDim, br, v)
			// 0xFF bytes are NaN in fp16 and bf16: an output a kernel
			// did not write shows as a difference, not as the last one's.
			poison := func() error { return c.stream.MemsetD8Async(ao.p, 0xff, int64(outBuf.(*Buffer).Bytes())) }
			if err := func() error {
				unpin, err := c.enter(ctx)
				if err != nil {
					return err
				}
				defer unpin()
				return poison()
			}(); err != nil {
				t.Fatal(err)
			}
			ms := timed(name, func() error { return c.launchFlash(name, op, qkv, ao, cache, st, seq0) })
			got := read()
			diff := "reference"
			switch {
			case ref == nil:
				ref = got
				for i, x := range c.dt.decode(ref) {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("%s %s: output %d is %g", dt, name, i, x)
					}
				}
			case bytes.Equal(got, ref):
				diff = "bit for bit the reference"
			default:
				var worst float64
				g, r := c.dt.decode(got), c.dt.decode(ref)
				for i := range g {
					worst = max(worst, math.Abs(float64(g[i])-float64(r[i])))
				}
				diff = fmt.Sprintf("max |Δ| %.3g", worst)
				if !(worst <= tol) {
					t.Errorf("%s %s: output differs from %s's by %.3g (bound %g)", dt, name, flashVariantName(op.HeadDim, defTile, flashVariants[0]), worst, tol)
				}
			}
			fmt.Fprintf(&b, "%-36s %9.3f %10.1f  %s\n", name, ms, flops/(ms/1e3)/1e12, diff)
		}
	}
	t.Logf("%s, %s: attention of the seed prefill (batch %d, %d queries, %d heads of %d, %.1f GFLOP), median of %d after 2 warm-up runs; the backend runs %s (%s):\n%s",
		c.DeviceInfo().Name, dt, op.Seqs, op.QLen, op.Heads, op.HeadDim, flops/1e9, flashVariantRuns,
		c.attentionKernel(op), flashVariantEnv, b.String())
}
