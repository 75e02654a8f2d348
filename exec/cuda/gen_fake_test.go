//go:build cgo

package cuda

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	pexec "github.com/partbench/partbench/exec"
)

// On the fake driver pb_gen loads and launches but writes nothing, so the
// sample read back (zeros from the memset) differs from the host
// generator: the backend says so and fills the same shards from the host.
// Every shard in device memory then equals the generator's, rounded to the
// element type; with Options.HostWeights the device is not tried.
func TestDeviceWeightsFallBackOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := tinyPlan(t, "test/tp2pp2-tiny")
	for _, opts := range []Options{{DType: "fp16"}, {DType: "bf16", HostWeights: true}} {
		c := fakeCompute(t, plan, 3, opts)
		src := c.WeightSource()
		want := "host (the device generated 0 for "
		if opts.HostWeights {
			want = "host (Options.HostWeights)"
		}
		if !strings.HasPrefix(src, want) {
			t.Errorf("%+v: weight source %q, want it to start with %q", opts, src, want)
		}
		gen := plan.Generator(3)
		for _, ts := range plan.Tensors(3) {
			w := c.frame.Weights[pexec.TensorKey{Layer: ts.Layer, Name: ts.Name}]
			raw, err := c.download(w.p, w.k*w.n)
			if err != nil {
				t.Fatal(err)
			}
			host, err := gen.Tensor(ts.Layer, ts.Name)
			if err != nil {
				t.Fatal(err)
			}
			got := c.dt.decode(raw)
			for i := range got {
				if got[i] != c.dt.round(host.Data[i]) {
					t.Fatalf("%+v: %s of layer %d element %d on the device %v, the generator's %v", opts, ts.Name, ts.Layer, i, got[i], c.dt.round(host.Data[i]))
				}
			}
		}
	}
}

// Describe names the additions and where the weights came from.
func TestDescribeNamesTheAdditions(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	c := fakeCompute(t, tinyPlan(t, "test/single-tiny"), 0, Options{DType: "fp32"})
	d := c.Describe()
	for _, want := range []string{"flash attention off (fp32 has no m16n8k16 mma)", "split-KV/fused cubin sm_90", "weights host (the device generated 0 for "} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe() = %q, lacks %q", d, want)
		}
	}
	// single-tiny's head dim is 8: nothing for flash.cu to run, so it is not compiled.
	c = fakeCompute(t, tinyPlan(t, "test/single-tiny"), 0, Options{DType: "fp16"})
	if want := "flash attention off (no attention of the plan has head dim [64 128] and 64 or more queries)"; !strings.Contains(c.Describe(), want) {
		t.Errorf("Describe() = %q, lacks %q", c.Describe(), want)
	}
}

// Options.Without (or $PARTBENCH_CUDA_WITHOUT) turns the additions off one
// by one, and an unknown name is refused naming the variable, the value
// and the choices.
func TestWithoutTurnsAdditionsOff(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := flashPlan(t, 128)
	c := fakeCompute(t, plan, 0, Options{DType: "fp16", Without: "flash, rope-table,device-weights"})
	if _, ok, why := c.FlashAttention(); ok || why != "turned off (Options.Without)" {
		t.Errorf("flash %v (%q) with Without flash", ok, why)
	}
	if c.rope.table != 0 {
		t.Error("the rotary table was made with Without rope-table")
	}
	if c.WeightSource() != "host (turned off (Options.Without))" {
		t.Errorf("weights %q with Without device-weights", c.WeightSource())
	}
	t.Setenv("PARTBENCH_CUDA_WITHOUT", "splitkv")
	c = fakeCompute(t, plan, 0, Options{DType: "fp16"})
	if c.splitKV.loaded || c.splitKV.why != "turned off (Options.Without)" {
		t.Errorf("split-KV loaded %v (%q) with $PARTBENCH_CUDA_WITHOUT=splitkv", c.splitKV.loaded, c.splitKV.why)
	}
	if _, ok, _ := c.FlashAttention(); !ok {
		t.Error("flash is off though only split-KV was turned off")
	}
	t.Setenv("PARTBENCH_CUDA_WITHOUT", "flash,tensorcores")
	_, err := New(plan, 0, Options{DType: "fp16"})
	want := `cuda: PARTBENCH_CUDA_WITHOUT="flash,tensorcores": "tensorcores" is not one of flash, splitkv, rope-table, device-weights, fused-norm, splitkv-one-launch, cublas-attention, bias-act, cublaslt, cublaslt-gelu`
	if err == nil || err.Error() != want {
		t.Errorf("unknown name: %v\nwant %s", err, want)
	}
}
