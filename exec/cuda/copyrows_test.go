//go:build cgo

package cuda

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// CopyRows moves exactly the asked elements between two micro-batches'
// buffers on the device, in the buffer's element type (fp16 here, float32
// token ids), and refuses ranges outside a buffer or overlapping in one.
// The micro-batches keep buffers of their own (parallel.pass_buffers =
// "per-microbatch", as the serving engine's config asks); shared, their x
// is one allocation.
func TestCopyRowsOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	cfg, err := configs.Load("test/tp2pp2-tiny") // 2 micro-batches of 40 rows
	if err != nil {
		t.Fatal(err)
	}
	cfg.Parallel.PassBuffers = configs.PassBuffersPerMicrobatch
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shared := fakeCompute(t, tinyPlan(t, "test/tp2pp2-tiny"), 0, Options{DType: "fp16"}).frame.Passes
	if shared[0].Bufs[model.X].p != shared[1].Bufs[model.X].p || shared[0].Bufs[model.Tokens].p == shared[1].Bufs[model.Tokens].p {
		t.Errorf("shared pass buffers: x at %#x and %#x, tokens at %#x and %#x; want x one allocation, tokens two",
			shared[0].Bufs[model.X].p, shared[1].Bufs[model.X].p, shared[0].Bufs[model.Tokens].p, shared[1].Bufs[model.Tokens].p)
	}
	c := fakeCompute(t, plan, 0, Options{DType: "fp16"})
	for _, tc := range []struct {
		buf                   model.Buf
		srcOff, dstOff, elems int
	}{{model.X, 64, 3 * 64, 2 * 64}, {model.Tokens, 5, 0, 7}} {
		src, err := c.Buffer(tc.buf, 0, tc.srcOff+tc.elems)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := c.Buffer(tc.buf, 1, tc.dstOff+tc.elems+3)
		if err != nil {
			t.Fatal(err)
		}
		in := make([]float32, src.Len())
		for i := range in {
			in[i] = float32(i%251) + 0.5 // exact in fp16 and float32
		}
		if err := src.(*Buffer).WriteF32(in); err != nil {
			t.Fatal(err)
		}
		zero := make([]float32, dst.Len())
		for i := range zero {
			zero[i] = -1
		}
		if err := dst.(*Buffer).WriteF32(zero); err != nil {
			t.Fatal(err)
		}
		if err := c.CopyRows(tc.buf, 0, tc.srcOff, 1, tc.dstOff, tc.elems); err != nil {
			t.Fatal(err)
		}
		got, err := dst.(*Buffer).ReadF32()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			want := float32(-1)
			if i >= tc.dstOff && i < tc.dstOff+tc.elems {
				want = in[tc.srcOff+i-tc.dstOff]
			}
			if v != want {
				t.Fatalf("%s: element %d = %v, want %v", tc.buf, i, v, want)
			}
		}
	}
	for _, tc := range []struct {
		srcMB, srcOff, dstMB, dstOff, elems int
		want                                string
	}{
		{0, 0, 1, 40*64 - 10, 11, "holds"},       // past the end of micro-batch 1's x
		{0, -1, 1, 0, 4, "must be ≥ 0"},          // a negative offset
		{0, 0, 0, 32, 64, "overlap"},             // one buffer, overlapping ranges
		{0, 0, 5, 0, 4, "micro-batch 5 outside"}, // no such micro-batch
	} {
		err := c.CopyRows(model.X, tc.srcMB, tc.srcOff, tc.dstMB, tc.dstOff, tc.elems)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CopyRows(%+v): %v, want %q", tc, err, tc.want)
		}
	}
}
