//go:build cgo

package cuda

import (
	"context"
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
	prompt := plan.Config.Workload.PromptTokens()
	var pre, dec [2]int64
	for i, without := range []string{"", "cublaslt,bias-act"} {
		c := fakeCompute(t, plan, 0, Options{DType: "fp16", Without: without})
		n0 := c.LaunchStats().Launches
		preNames := runPhase(t, c, plan, partition.Prefill, 0)
		n1 := c.LaunchStats().Launches
		if err := c.ResetTimes(); err != nil {
			t.Fatal(err)
		}
		n2 := c.LaunchStats().Launches
		decNames := runPhase(t, c, plan, partition.Decode, prompt)
		pre[i], dec[i] = n1-n0, c.LaunchStats().Launches-n2
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
// per row would differ). Small integers keep every sum exact.
func TestLtBiasGemmValuesOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/gpt2-tiny")
	c := fakeCompute(t, plan, 0, Options{DType: "fp32"})
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
