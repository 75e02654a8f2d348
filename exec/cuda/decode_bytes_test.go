package cuda

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// Where a decode step's time goes, by arithmetic: each op's least HBM
// traffic (decodeOpBytes) against the device's bandwidth. The seed layers
// at batch 16 and context 2048 move about 4.3 GB per step, half of it the
// KV cache; at batch 1 the weights are 94 % of 2.3 GB.

// hbmBytesPerSH200 is the H200's HBM3e bandwidth, 4.8 TB/s (NVIDIA H200
// datasheet); the floor of a decode step is its bytes over it.
const hbmBytesPerSH200 = 4.8e12

// seed4Config is scripts/gpu-check.sh's seed4-1gpu: the seed layers
// (hidden 4096, 32 heads of 128, ffn 16384 gated, fp16) at 4 layers on
// one GPU, with batch sequences over a context of 2048.
func seed4Config(t *testing.T, batch int) *partition.Plan {
	t.Helper()
	return oneGPUPlan(t, "seed4-1gpu", fmt.Sprintf(`[model]
preset = "seed-dense16"
layers = 4
[workload]
batch = %d
context = 2048
output_tokens = 16
[parallel]
tp = 1
pp = 1
microbatches = 1
`, batch))
}

// decodeOpBytes is the least HBM traffic of compute op at cache position
// past, elements of eb bytes: a GEMM reads its weight (K·N) and its input
// rows and writes its output rows; attention reads every cached key and
// value of its sequences up to the new positions (past + QLen of them,
// kvl·hd each) besides its rows of qkv and output; a residual reads x and
// y and writes x; the others read their input rows and write their output
// rows (a norm also reads its weight).
func decodeOpBytes(op *partition.Op, past, eb int) int64 {
	rows := int64(op.Rows)
	var elems int64
	switch op.Kind {
	case partition.Gemm:
		elems = int64(op.K)*int64(op.N) + rows*int64(op.K) + rows*int64(op.N)
	case partition.Attention:
		elems = 2*int64(op.Seqs)*int64(past+op.QLen)*int64(op.KVHeads)*int64(op.HeadDim) + rows*int64(op.InWidth) + rows*int64(op.OutWidth)
	case partition.Residual:
		elems = 3 * rows * int64(op.OutWidth)
	case partition.Norm, partition.LayerNorm:
		elems = rows*int64(op.InWidth+op.OutWidth) + int64(op.OutWidth)
	default:
		elems = rows * int64(op.InWidth+op.OutWidth)
	}
	return elems * int64(eb)
}

// A seed decode step's bytes, derived by hand (fp16, past 2032 = the
// prompt, so n = 2033 positions):
//
//	weights per layer: 4096·12288 + 4096·4096 + 4096·32768 + 16384·4096
//	  = 268,435,456 elements = 536,870,912 B; 4 layers 2,147,483,648 B.
//	cache per layer, batch b: 2 · b · 2033 · 4096 · 2 B = b · 33,308,672 B;
//	  4 layers: b = 16 2,131,755,008 B, b = 1 133,234,688 B.
//	activations per layer: per row, GEMM inputs and outputs (4096 + 12288)
//	  + (4096 + 4096) + (4096 + 32768) + (16384 + 4096) = 81,920,
//	  attention's qkv and output 16,384, two norms 2·(4096 + 4096), two
//	  residuals 2·3·4096 = 24,576, the gated activation 32768 + 16384:
//	  188,416 elements per row, and the two norm weights 8,192 per layer;
//	  4 layers · 2 B · (b·188,416 + 8,192): b = 16 24,182,784 B, b = 1
//	  1,572,864 B.
//	the input and sample ops: 2 · b rows · (4096 + 1) · 2 B: b = 16
//	  262,208 B, b = 1 16,388 B.
//
// The floor at 4.8 TB/s: 4,303.5 MB → 0.8966 ms at batch 16 (activations
// 0.6 %), 2,282.3 MB → 0.4755 ms at batch 1 (weights 94 %).
func TestDecodeBytesSeed(t *testing.T) {
	for _, tc := range []struct {
		batch                int
		weights, cache, acts int64
		floorMS              float64
	}{
		{16, 2147483648, 2131755008, 24182784 + 262208, 0.8966},
		{1, 2147483648, 133234688, 1572864 + 16388, 0.4755},
	} {
		plan := seed4Config(t, tc.batch)
		past := plan.Config.Workload.PromptTokens()
		if past != 2032 {
			t.Fatalf("prompt %d, the derivation assumes 2032", past)
		}
		var weights, cache, total int64
		prog := plan.Program(0, partition.Decode)
		for i := range prog.Ops {
			op := &prog.Ops[i]
			if _, comm := op.Kind.Comm(); comm {
				continue
			}
			total += decodeOpBytes(op, past, 2)
			switch op.Kind {
			case partition.Gemm:
				weights += 2 * int64(op.K) * int64(op.N)
			case partition.Attention:
				cache += 2 * 2 * int64(op.Seqs) * int64(past+op.QLen) * int64(op.KVHeads) * int64(op.HeadDim)
			}
		}
		if weights != tc.weights || cache != tc.cache {
			t.Errorf("batch %d: weights %d B, cache %d B; want %d and %d", tc.batch, weights, cache, tc.weights, tc.cache)
		}
		if rest := total - weights - cache; rest != tc.acts {
			t.Errorf("batch %d: activations %d B, want %d", tc.batch, rest, tc.acts)
		}
		if floor := float64(total) / hbmBytesPerSH200 * 1e3; floor < tc.floorMS*0.9999 || floor > tc.floorMS*1.0001 {
			t.Errorf("batch %d: floor %.5f ms, want %.4f", tc.batch, floor, tc.floorMS)
		}
	}
}

// On a GPU: the seed decode step at batch 16 and batch 1 (context 2048),
// each op timed on the device op by op (events around each, so tiny ops
// read a few µs high) beside its bytes at 4.8 TB/s, then the step as one
// graph, with the additions on, with split-KV in two launches, and with
// fused-norm and splitkv off. It
// logs the tables the device check reads; it fails only when an op did
// not run or a step's device time is missing.
func TestRealGPUDecodeBreakdown(t *testing.T) {
	realGPU(t)
	for _, batch := range []int{16, 1} {
		decodeBreakdown(t, seed4Config(t, batch), batch, "")
	}
}

// decodeBreakdown runs plan's prefill, then decode steps op by op and as
// graphs, and logs where the device time went (batch names the plan in
// messages; dtype overrides the plan's).
func decodeBreakdown(t *testing.T, plan *partition.Plan, batch int, dtype string) {
	{
		past := plan.Config.Workload.PromptTokens()
		prog := plan.Program(0, partition.Decode)
		var ops []*partition.Op
		for i := range prog.Ops {
			if _, comm := prog.Ops[i].Kind.Comm(); !comm {
				ops = append(ops, &prog.Ops[i])
			}
		}
		step := func(c *Compute, p int) {
			for _, op := range ops {
				if err := c.Exec(context.Background(), op, p); err != nil {
					t.Fatalf("batch %d %s: %v", batch, op.Name, err)
				}
			}
			if err := c.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		const measured = 3
		for _, v := range []struct {
			name    string
			opts    Options
			perStep bool // each op timed (eager)
		}{
			{"op by op", Options{DType: dtype}, true},
			{"graph", Options{DType: dtype, Graphs: true}, false},
			{"graph, Without splitkv-one-launch", Options{DType: dtype, Graphs: true, Without: "splitkv-one-launch"}, false},
			{"graph, Without fused-norm,splitkv", Options{DType: dtype, Graphs: true, Without: "fused-norm,splitkv"}, false},
		} {
			c, err := New(plan, 0, v.opts)
			if err != nil {
				t.Fatal(err)
			}
			// The prefill pass fills the cache and feeds the first decode
			// step its tokens (one pass: the config has no prefill chunks).
			pre := plan.Program(0, partition.Prefill)
			for i := range pre.Ops {
				if _, comm := pre.Ops[i].Kind.Comm(); !comm {
					if err := c.Exec(context.Background(), &pre.Ops[i], 0); err != nil {
						t.Fatalf("batch %d prefill %s: %v", batch, pre.Ops[i].Name, err)
					}
				}
			}
			for s := 0; s < 3; s++ { // warm-up, and the graph's eager runs and capture
				step(c, past+s)
			}
			if err := c.ResetTimes(); err != nil {
				t.Fatal(err)
			}
			for s := 3; s < 3+measured; s++ {
				step(c, past+s)
			}
			times, err := c.OpTimes()
			if err != nil {
				t.Fatal(err)
			}
			var total float64
			byName := map[string]OpTime{}
			for _, ot := range times {
				total += ot.GPUS
				byName[strings.SplitN(ot.Name, " [", 2)[0]] = ot
			}
			stepMS := total / measured * 1e3
			var bytes int64
			for _, op := range ops {
				bytes += decodeOpBytes(op, past+3, c.dt.bytes)
			}
			floor := float64(bytes) / hbmBytesPerSH200 * 1e3
			t.Logf("batch %d, %s (%s): %.3f ms per step on the device, floor %.3f ms (%.3f GB at 4.8 TB/s): %.2f× the floor, %.2f TB/s",
				batch, v.name, c.Describe(), stepMS, floor, float64(bytes)/1e9, stepMS/floor, float64(bytes)/(stepMS/1e3)/1e12)
			if stepMS <= 0 && !strings.HasPrefix(c.DeviceInfo().Name, "Fake") {
				t.Errorf("batch %d %s: no device time recorded", batch, v.name)
			}
			if _, ok := byName["graph"]; ok == v.perStep || (!v.perStep && len(byName) != 1) {
				t.Errorf("batch %d %s: timing entries %v, want every op's op by op, one graph's as graphs", batch, v.name, times)
			}
			if v.perStep {
				type row struct {
					name  string
					ms    float64
					bytes int64
				}
				var rows []row
				for _, op := range ops {
					ot, ok := byName[op.Name]
					if !ok {
						t.Errorf("batch %d: op %s has no device time", batch, op.Name)
						continue
					}
					rows = append(rows, row{ot.Name, ot.GPUS / float64(ot.Calls) * 1e3, decodeOpBytes(op, past+3, c.dt.bytes)})
				}
				sort.SliceStable(rows, func(i, j int) bool { return rows[i].ms > rows[j].ms })
				var b strings.Builder
				fmt.Fprintf(&b, "%-45s %10s %12s %10s %8s\n", "op", "µs", "MB", "floor µs", "× floor")
				for _, r := range rows {
					fl := float64(r.bytes) / hbmBytesPerSH200 * 1e6
					fmt.Fprintf(&b, "%-45s %10.1f %12.3f %10.1f %8.2f\n", r.name, r.ms*1e3, float64(r.bytes)/1e6, fl, r.ms*1e3/fl)
				}
				if !strings.HasPrefix(c.DeviceInfo().Name, "Fake") { // the fakes' times are made up
					t.Logf("batch %d, per op (mean of %d steps, slowest first):\n%s", batch, measured, b.String())
				}
			}
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}

// On a GPU: the seed layers' four GEMMs as the backend calls them (weights
// row-major [K][N]: cuBLAS NN through cuda.RowMajorGemm) beside the same
// product with the weights stored [N][K] (TN, nn.Linear's layout, what
// PyTorch's baseline runs), at M = 1 and 16 (decode) and 32,512 (the seed
// prefill, 16 × 2032 rows): TB/s of the weight bytes at small M, TFLOP/s
// at large. It logs the table a layout decision needs; it fails only when
// a GEMM fails or its time is missing.
func TestRealGPUGemmLayouts(t *testing.T) {
	realGPU(t)
	c, err := New(seed4Config(t, 16), 0, Options{NoTiming: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("%s: the mean of %d calls after one warm-up\n%s", c.Describe(), gemmReps,
		gemmLayouts(t, c, []gemmShape{{"wqkv", 4096, 12288}, {"wo", 4096, 4096}, {"w_up", 4096, 32768}, {"w_down", 16384, 4096}}, []int{1, 16, 16 * 2032}))
}

type gemmShape struct {
	name string
	k, n int
}

const gemmReps = 5

// gemmLayouts times each shape at each M in both weight layouts on c's
// stream (scratch buffers allocated on c) and returns the table.
func gemmLayouts(t *testing.T, c *Compute, shapes []gemmShape, ms []int) string {
	t.Helper()
	var maxK, maxN, maxM int
	for _, s := range shapes {
		maxK, maxN = max(maxK, s.k), max(maxN, s.n)
	}
	for _, m := range ms {
		maxM = max(maxM, m)
	}
	eb := int64(c.dt.bytes)
	var in, out, w cuda.DevicePtr
	err := c.Do(func() error {
		var err error
		if in, err = c.alloc("workspace", int64(maxM)*int64(maxK)*eb); err != nil {
			return err
		}
		if out, err = c.alloc("workspace", int64(maxM)*int64(maxN)*eb); err != nil {
			return err
		}
		w, err = c.alloc("workspace", int64(maxK)*int64(maxN)*eb)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %6s %-4s %10s %10s %10s\n", "gemm", "M", "form", "µs", "TFLOP/s", "TB/s")
	for _, m := range ms {
		for _, s := range shapes {
			for _, form := range []string{"NN", "TN"} {
				g := cuda.RowMajorGemm(m, s.n, s.k, in, w, out, c.dt.blas)
				if form == "TN" { // Cᵀ = Wᵀ·Aᵀ with W stored [N][K]: op T on A, ld K
					g.TransA, g.LDA = cuda.OpT, s.k
				}
				gemm := func(n int) error {
					return c.Do(func() error {
						for range n {
							if err := c.handle.GemmEx(g); err != nil {
								return err
							}
						}
						return nil
					})
				}
				if err := gemm(1); err != nil { // warm-up: cuBLAS picks its kernel
					t.Fatalf("%s M %d %s: %v", s.name, m, form, err)
				}
				if err := c.Mark(); err != nil {
					t.Fatal(err)
				}
				if err := gemm(gemmReps); err != nil {
					t.Fatalf("%s M %d %s: %v", s.name, m, form, err)
				}
				if err := c.Mark(); err != nil {
					t.Fatal(err)
				}
				ts, err := c.Marks()
				if err != nil {
					t.Fatal(err)
				}
				if len(ts) != 2 || math.IsNaN(ts[1]) {
					t.Fatalf("%s M %d %s: marks %v", s.name, m, form, ts)
				}
				sec := ts[1] / gemmReps
				flops := 2 * float64(m) * float64(s.n) * float64(s.k)
				bytes := float64(eb) * (float64(s.k)*float64(s.n) + float64(m)*float64(s.k+s.n))
				fmt.Fprintf(&b, "%-8s %6d %-4s %10.1f %10.1f %10.2f\n", s.name, m, form, sec*1e6, flops/sec/1e12, bytes/sec/1e12)
			}
		}
	}
	return b.String()
}

// On a GPU: the cuBLAS prefill attention (fp32 and fp16, head dim 8: no
// flash kernel) against pb_attention_vV on the same inputs, through the
// backend's own attention op (rotation and cache append included). The
// outputs are convex combinations of values in [−2, 2]. fp32: sums in
// another order, within 1e-5. fp16: P rounded before P·V moves an output
// by ≤ u·Σ P·|v| ≤ 2u, and each side rounds its output (≤ u·2 each), u =
// 2⁻¹¹: ≤ 6u ≈ 2.9e-3; 6e-3 leaves a factor 2.
func TestRealGPUBlasAttention(t *testing.T) {
	realGPU(t)
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.Layers = 1
	cfg.Workload.Batch, cfg.Workload.Context, cfg.Workload.OutputTokens = 2, 80, 4
	cfg.Parallel.Microbatches = 1
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prog := plan.Program(0, partition.Prefill)
	var op *partition.Op
	for i := range prog.Ops {
		if prog.Ops[i].Kind == partition.Attention {
			op = &prog.Ops[i]
		}
	}
	for _, tc := range []struct {
		dt  string
		tol float64
	}{{"fp32", 1e-5}, {"fp16", 6e-3}} {
		in := make([]float32, op.Rows*op.InWidth)
		for i := range in {
			in[i] = float32((i*7919)%401)/100 - 2
		}
		var outs [2][]float32
		for k, without := range []string{"", "cublas-attention"} {
			c, err := New(plan, 0, Options{DType: tc.dt, Without: without})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.usesBlasAttn(op); got != (without == "") {
				t.Fatalf("%s Without %q: cuBLAS %v", tc.dt, without, got)
			}
			b, err := c.Buffer(op.In, 0, len(in))
			if err == nil {
				err = b.(*Buffer).WriteF32(in)
			}
			if err == nil {
				err = c.Exec(context.Background(), op, 0)
			}
			if err == nil {
				err = c.Sync(context.Background())
			}
			var o pexec.Buffer
			if err == nil {
				o, err = c.Buffer(op.Out, 0, op.Rows*op.OutWidth)
			}
			if err == nil {
				outs[k], err = o.(*Buffer).ReadF32()
			}
			c.Close()
			if err != nil {
				t.Fatalf("%s Without %q: %v", tc.dt, without, err)
			}
		}
		var worst float64
		for i := range outs[0] {
			worst = max(worst, math.Abs(float64(outs[0][i])-float64(outs[1][i])))
		}
		t.Logf("%s: max |cuBLAS − pb_attention| = %.3g over %d outputs", tc.dt, worst, len(outs[0]))
		if worst > tc.tol || math.IsNaN(worst) {
			t.Errorf("%s: cuBLAS attention differs from pb_attention by %.3g (tolerance %g)", tc.dt, worst, tc.tol)
		}
	}
}
