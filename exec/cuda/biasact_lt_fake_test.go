//go:build cgo

package cuda

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// On the fakes (whose cuBLASLt plans every product), each of gpt2-tiny's
// biased GEMMs (wqkv, wo, w_up, w_down) is one cuBLASLt call with the
// bias as its epilogue: hand count, 4 pb_bias launches fewer per layer
// than cublasGemmEx + pb_bias, 8 per prefill pass and per decode step
// (L = 2); the GEMM count is unchanged (one cublasLtMatmul for each
// cublasGemmEx). The activation runs alone (pb_act), the LM head (no
// bias) on cublasGemmEx, and the timing entries and Describe say so: 16
// GEMMs planned (4 per layer, 2 layers, prefill and decode rows).
func TestLtBiasOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/gpt2-tiny")
	var pre, dec [2]int64
	for i, without := range []string{"", "cublaslt,bias-act"} {
		c := fakeCompute(t, plan, 0, Options{DType: "fp16", Without: without})
		preNames, decNames := runPrefillDecode(t, c, plan, &pre[i], &dec[i])
		lt := i == 0
		for _, names := range [][]string{preNames, decNames} {
			for _, e := range []struct {
				name string
				want bool
			}{
				{"L00.wqkv [cublasLt bias]", lt}, {"L00.wo [cublasLt bias]", lt},
				{"L01.w_up [cublasLt bias]", lt}, {"L01.w_down [cublasLt bias]", lt},
				{"L00.act", true}, {"lm_head", true}, {"L00.wqkv", !lt},
			} {
				if got := slices.Contains(names, e.name); got != e.want {
					t.Errorf("Without %q: timing entry %q present %v, want %v (entries %s)", without, e.name, got, e.want, strings.Join(names, ", "))
				}
			}
		}
		d := c.Describe()
		if want := "bias epilogue cuBLASLt 130100 ("; lt && !strings.Contains(d, want) || !lt && !strings.Contains(d, "bias epilogue off (turned off (Options.Without))") {
			t.Errorf("Without %q: Describe() = %q", without, d)
		}
		if lt && (len(c.lt.plans) != 16 || len(c.lt.skip) != 0 || !strings.Contains(d, "on 16 GEMMs")) {
			t.Errorf("%d GEMMs planned, %d refused, want 16 and 0 (%s)", len(c.lt.plans), len(c.lt.skip), d)
		}
	}
	if d := pre[1] - pre[0]; d != 8 {
		t.Errorf("prefill: %d launches with cuBLASLt, %d without: %d saved, want 8", pre[0], pre[1], d)
	}
	if d := dec[1] - dec[0]; d != 8 {
		t.Errorf("decode: %d launches with cuBLASLt, %d without: %d saved, want 8", dec[0], dec[1], d)
	}
}

// Where cuBLASLt's heuristic has no algorithm, every biased GEMM runs on
// cublasGemmEx and the up projection's bias goes with the activation
// (pb_bias_act), and Describe names the first op refused and why.
func TestLtNoAlgorithmOnFakes(t *testing.T) {
	cudatest.Build(t, "FAKE_LT_NO_ALGO").Setenv(t)
	plan := tinyPlan(t, "test/gpt2-tiny")
	c := fakeCompute(t, plan, 0, Options{DType: "fp16"})
	names := runPhase(t, c, plan, partition.Prefill, 0)
	for _, want := range []string{"L00.wqkv", "L00.w_up [bias in L00.act]", "L00.act [+bias of L00.w_up]"} {
		if !slices.Contains(names, want) {
			t.Errorf("no timing entry %q (entries %s)", want, strings.Join(names, ", "))
		}
	}
	d := c.Describe()
	if len(c.lt.plans) != 0 || len(c.lt.skip) != 8 || !strings.Contains(d, "on 0 GEMMs, not on 8 (L00.w_down: cublaslt: no algorithm for this product") {
		t.Errorf("%d planned, %d refused; Describe() = %q", len(c.lt.plans), len(c.lt.skip), d)
	}
}

// On the fakes, whose cuBLASLt computes fp32 products with their epilogue
// on host memory, one cuBLASLt GEMM of gpt2-tiny (L00.w_up: 80 rows,
// K = 2, N = 8) writes the row-major h·W + b: the operands reach cuBLASLt
// in RowMajorGemm's roles and the bias adds per output feature (a bias
// per row would differ). Small integers keep every sum exact. Without
// cublaslt-gelu, so the GELU epilogue does not take the up projection.
func TestLtBiasGemmValuesOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/gpt2-tiny")
	c := fakeCompute(t, plan, 0, Options{DType: "fp32", Without: "cublaslt-gelu"})
	prog := plan.Program(0, partition.Prefill)
	i := slices.IndexFunc(prog.Ops, func(op partition.Op) bool { return op.Name == "L00.w_up" })
	op := &prog.Ops[i]
	rows, K, N := op.Rows, op.K, op.N
	if rows != 80 || K != 2 || N != 8 {
		t.Fatalf("L00.w_up is %d×%d·%d×%d, the test assumes 80×2·2×8", rows, K, K, N)
	}
	h := make([]float32, rows*K)
	for j := range h {
		h[j] = float32(j%7 - 3)
	}
	W := make([]float32, K*N)
	for j := range W {
		W[j] = float32(j%5 - 2)
	}
	b := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	in, err := c.Buffer(op.In, 0, rows*K)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.(*Buffer).WriteF32(h); err != nil {
		t.Fatal(err)
	}
	w, err := c.frame.Weight(op)
	if err != nil {
		t.Fatal(err)
	}
	bias := c.frame.Weights[pexec.TensorKey{Layer: op.Layer, Name: op.Bias}]
	if err := c.Do(func() error {
		if err := c.drv.CopyHtoD(w.p, cuda.Bytes(W)); err != nil {
			return err
		}
		return c.drv.CopyHtoD(bias.p, cuda.Bytes(b))
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(context.Background(), op, 0); err != nil {
		t.Fatal(err)
	}
	if c.opTag(op) != " [cublasLt bias]" {
		t.Fatalf("L00.w_up did not run on cuBLASLt (tag %q)", c.opTag(op))
	}
	out, err := c.Buffer(op.Out, 0, rows*N)
	if err != nil {
		t.Fatal(err)
	}
	got, err := out.(*Buffer).ReadF32()
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rows; r++ {
		for n := 0; n < N; n++ {
			want := b[n]
			for k := 0; k < K; k++ {
				want += h[r*K+k] * W[k*N+n]
			}
			if got[r*N+n] != want {
				t.Fatalf("u[%d][%d] = %g, want %g (h·W + b, row-major)", r, n, got[r*N+n], want)
			}
		}
	}
}

// The fakes' cuBLASLt computes tanh-GELU in its GELU epilogues (fp32), so
// New's probe finds the tanh form and gpt2-tiny's up projections (2
// layers, prefill and decode rows: 4) run with their activation as one
// cuBLASLt call: the activation launches nothing, 1 launch fewer per layer
// than with cublaslt-gelu off (2 per prefill pass), and a =
// gelu_tanh(h·W + b) (float64 within 10⁻⁶ of |want| + 10⁻⁶: the fake's
// fp32 tanhf). With FAKE_LT_GELU_ERF the probe finds erf's GELU and the
// epilogue is not used.
func TestLtGELUOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/gpt2-tiny")
	var launches [2]int64
	for i, without := range []string{"", "cublaslt-gelu"} {
		c := fakeCompute(t, plan, 0, Options{DType: "fp32", Without: without})
		n0 := c.LaunchStats().Launches
		names := runPhase(t, c, plan, partition.Prefill, 0)
		launches[i] = c.LaunchStats().Launches - n0
		on := i == 0
		if on && (c.lt.gelu != "tanh" || len(c.lt.geluNext) != 4) {
			t.Fatalf("probe: %q (%s), %d fusions planned; want tanh and 4", c.lt.gelu, c.lt.geluWhy, len(c.lt.geluNext))
		}
		for _, e := range []struct {
			name string
			want bool
		}{
			{"L00.w_up [cublasLt bias+GELU]", on}, {"L00.act [in L00.w_up]", on}, {"L01.act [in L01.w_up]", on},
			{"L00.w_up [cublasLt bias]", !on}, {"L00.act", !on}, {"L00.w_down [cublasLt bias]", true},
		} {
			if got := slices.Contains(names, e.name); got != e.want {
				t.Errorf("Without %q: timing entry %q present %v, want %v (entries %s)", without, e.name, got, e.want, strings.Join(names, ", "))
			}
		}
		if d := c.Describe(); on && !strings.Contains(d, "GELU_BIAS epilogue computes tanh-GELU") {
			t.Errorf("Describe() = %q", d)
		}
	}
	if d := launches[1] - launches[0]; d != 2 {
		t.Errorf("prefill: %d launches with the GELU epilogue, %d without: %d saved, want 2", launches[0], launches[1], d)
	}

	// The values of one up projection and its activation.
	c := fakeCompute(t, plan, 0, Options{DType: "fp32"})
	ops := plan.Program(0, partition.Prefill).Ops
	i := slices.IndexFunc(ops, func(op partition.Op) bool { return op.Name == "L00.w_up" })
	up, act := &ops[i], &ops[i+1]
	rows, K, N := up.Rows, up.K, up.N
	h := make([]float32, rows*K)
	for j := range h {
		h[j] = float32(j%7-3) / 2
	}
	in, err := c.Buffer(up.In, 0, rows*K)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.(*Buffer).WriteF32(h); err != nil {
		t.Fatal(err)
	}
	w, err := c.frame.Weight(up)
	if err != nil {
		t.Fatal(err)
	}
	W, B := make([]float32, K*N), make([]float32, N)
	bias := c.frame.Weights[pexec.TensorKey{Layer: up.Layer, Name: up.Bias}]
	if err := c.Do(func() error {
		if err := c.drv.CopyDtoH(cuda.Bytes(W), w.p); err != nil {
			return err
		}
		return c.drv.CopyDtoH(cuda.Bytes(B), bias.p)
	}); err != nil {
		t.Fatal(err)
	}
	for _, op := range []*partition.Op{up, act} {
		before := c.LaunchStats().Launches
		if err := c.Exec(context.Background(), op, 0); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int64{true: 1, false: 0}[op == up]; c.LaunchStats().Launches-before != want {
			t.Errorf("%s: %d launches, want %d", op.Name, c.LaunchStats().Launches-before, want)
		}
	}
	out, err := c.Buffer(act.Out, 0, rows*N)
	if err != nil {
		t.Fatal(err)
	}
	got, err := out.(*Buffer).ReadF32()
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rows; r++ {
		for n := 0; n < N; n++ {
			x := float64(B[n])
			for k := 0; k < K; k++ {
				x += float64(h[r*K+k]) * float64(W[k*N+n])
			}
			want := geluTanh64(x)
			if d := math.Abs(float64(got[r*N+n]) - want); d > 1e-6*math.Abs(want)+1e-6 {
				t.Fatalf("a[%d][%d] = %g, want gelu_tanh(h·W + b) = %g", r, n, got[r*N+n], want)
			}
		}
	}

	cudatest.Build(t, "FAKE_LT_GELU_ERF").Setenv(t)
	e := fakeCompute(t, plan, 0, Options{DType: "fp32"})
	if e.lt.gelu != "erf" || len(e.lt.geluNext) != 0 || !strings.Contains(e.Describe(), "GELU_BIAS epilogue computes erf-GELU, not GPT-2's") {
		t.Errorf("erf fake: probe %q (%s), %d fusions; Describe() = %q", e.lt.gelu, e.lt.geluWhy, len(e.lt.geluNext), e.Describe())
	}
}

// With the GELU epilogue, an op run between the up projection and its
// activation first gets u written as the unfused path leaves it: launches
// per op of gpt2-tiny's layer 0 (fp32, the fakes' tanh epilogue): w_up 1
// (cuBLASLt, into a); w_down 3 (u filled: cublasGemmEx and pb_bias; then
// its own cuBLASLt call); act 1 (pb_act on u, alone); w_up 1; act 0; act
// again 0 (a is already written); w_down 1 (u is dead: nothing to fill).
func TestLtGELUOutOfOrderOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/gpt2-tiny")
	c := fakeCompute(t, plan, 0, Options{DType: "fp32"})
	prog := plan.Program(0, partition.Prefill)
	get := func(name string) *partition.Op { return opNamed(t, prog, name) }
	up, act, down := get("L00.w_up"), get("L00.act"), get("L00.w_down")
	expectLaunches(t, c, []launchStep{{up, 1}, {down, 3}, {act, 1}, {up, 1}, {act, 0}, {act, 0}, {down, 1}})
}

// The probe's rule on outputs computed here: tanh-GELU and erf-GELU of
// the probe's inputs, rounded to each element type, are named as such;
// outputs of the wrong scale, or of tanh's form on some elements and
// erf's on others, are named neither, and a coarse tanh is taken for
// 16-bit types only.
func TestGeluFormOf(t *testing.T) {
	x := make([]float32, 64)
	for i := range x {
		x[i] = float32(-4 + 7*float64(i)/63)
	}
	gelu := func(erf bool, dt dtype) []float32 {
		g := make([]float32, len(x))
		for i, xv := range x {
			v := float64(xv)
			if erf {
				g[i] = dt.round(float32(0.5 * v * (1 + math.Erf(v/math.Sqrt2))))
			} else {
				g[i] = dt.round(float32(geluTanh64(v)))
			}
		}
		return g
	}
	for _, st := range storageTypes {
		dt := dtypes[st.name]
		if f, why := geluFormOf(x, gelu(false, dt), unitRoundoff[st.name]); f != "tanh" {
			t.Errorf("%s tanh-GELU: %q (%s)", st.name, f, why)
		}
		if f, why := geluFormOf(x, gelu(true, dt), unitRoundoff[st.name]); f != "erf" {
			t.Errorf("%s erf-GELU: %q (%s)", st.name, f, why)
		}
		mixed := gelu(false, dt)
		copy(mixed[:4], gelu(true, dt)[:4]) // x ≤ −3.67: erf's form on 4 elements
		if f, _ := geluFormOf(x, mixed, unitRoundoff[st.name]); f != "" {
			t.Errorf("%s mixed forms: %q, want neither", st.name, f)
		}
		scaled := gelu(false, dt)
		for i := range scaled {
			scaled[i] *= 1.1
		}
		if f, _ := geluFormOf(x, scaled, unitRoundoff[st.name]); f != "" {
			t.Errorf("%s tanh-GELU · 1.1: %q, want neither", st.name, f)
		}
		// tanh's form with 10⁻³ added to every output (a coarse tanh): within
		// fp16's and bf16's bound (4u: 2·10⁻³, 1.6·10⁻²), beyond fp32's (10⁻⁵).
		coarse := gelu(false, dt)
		for i := range coarse {
			coarse[i] = dt.round(coarse[i] + 1e-3)
		}
		if f, why := geluFormOf(x, coarse, unitRoundoff[st.name]); (f == "tanh") != (st.name != "fp32") {
			t.Errorf("%s tanh-GELU + 10⁻³: %q (%s), want tanh only for 16-bit types", st.name, f, why)
		}
	}
}
