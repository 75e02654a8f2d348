package cuda

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/partition"
)

// cpuReference is exec.Check's reference on exec/cpu.
func cpuReference(plan *partition.Plan, rank int) (pexec.Compute, error) { return cpu.New(plan, rank) }

// checkOptions are CheckOptions against exec/cpu through exec/localcomm, as
// the command makes them.
func checkOptions(opts Options) pexec.CheckOptions {
	return CheckOptions(opts, cpuReference, localcomm.Comms)
}

// roundedCPU is exec/cpu with the GPU backend's storage rounding: weights
// rounded to the element type once, and every op's output buffer rounded
// after the op (fp32 arithmetic in between, as in the kernels and in
// cuBLAS with fp32 accumulation). It does not round the rotated keys in
// the KV cache, and its sums run in gonum's order rather than cuBLAS's:
// both are below the storage rounding. It estimates, without a GPU, the
// error the GPU backend shows against the fp32 reference.
type roundedCPU struct {
	*cpu.Compute
	dt   dtype
	plan *partition.Plan
}

func newRoundedCPU(plan *partition.Plan, rank int, dt dtype) (pexec.Compute, error) {
	c, err := cpu.New(plan, rank)
	if err != nil {
		return nil, err
	}
	r := &roundedCPU{Compute: c, dt: dt, plan: plan}
	round := func(v []float32) {
		for i, f := range v {
			v[i] = dt.round(f)
		}
	}
	for _, l := range plan.Ranks[rank].Layers {
		for _, name := range []string{"attn_norm", "wqkv", "wo", "mlp_norm", "w_up", "w_down"} {
			round(c.Weight(l, name))
		}
	}
	for _, name := range []string{"embed", "final_norm", "lm_head"} {
		round(c.Weight(-1, name))
	}
	return r, nil
}

func (r *roundedCPU) Exec(ctx context.Context, op *partition.Op, past int) error {
	if err := r.Compute.Exec(ctx, op, past); err != nil {
		return err
	}
	m, tp := r.plan.Model, r.plan.TP
	var n int // the elements the op wrote
	switch op.Kind {
	case partition.Input, partition.Norm, partition.Residual:
		n = op.Rows * m.Hidden
	case partition.Gemm:
		n = op.Rows * op.N
	case partition.Attention:
		n = op.Rows * m.Heads / tp * m.HeadDim
	case partition.Activation:
		n = op.Rows * m.FFN / tp
	default: // sample writes token ids
		return nil
	}
	b, err := r.Compute.Buffer(op.Out, op.Microbatch, n)
	if err != nil {
		return err
	}
	v := b.(pexec.F32)
	for i, f := range v {
		v[i] = r.dt.round(f)
	}
	return nil
}

// roundedComms rounds what a rank receives (the staged communicator
// uploads received values in the element type).
type roundedComm struct {
	pexec.Comm
	dt dtype
}

type roundedGroup struct {
	pexec.Group
	dt dtype
}

func (c roundedComm) round(b pexec.Buffer) {
	if v, ok := b.(pexec.F32); ok {
		for i, f := range v {
			v[i] = c.dt.round(f)
		}
	}
}

func (c roundedComm) Recv(ctx context.Context, b pexec.Buffer, peer int) error {
	if err := c.Comm.Recv(ctx, b, peer); err != nil {
		return err
	}
	if b.Len() > 0 && b.Bytes() > 0 && !isTokens(b) {
		c.round(b)
	}
	return nil
}

// isTokens tells the tokens buffer (float32 on the GPU too) from hidden
// states: only token ids are all non-negative integers.
func isTokens(b pexec.Buffer) bool {
	v := b.(pexec.F32)
	for _, f := range v {
		if f != float32(int(f)) || f < 0 {
			return false
		}
	}
	return true
}

func (c roundedComm) NewGroup(ctx context.Context, ranks []int) (pexec.Group, error) {
	g, err := c.Comm.NewGroup(ctx, ranks)
	if err != nil {
		return nil, err
	}
	return roundedGroup{g, c.dt}, nil
}

func (g roundedGroup) AllReduce(ctx context.Context, b pexec.Buffer) error {
	if err := g.Group.AllReduce(ctx, b); err != nil {
		return err
	}
	roundedComm{dt: g.dt}.round(b)
	return nil
}

func (g roundedGroup) AllGather(ctx context.Context, send, recv pexec.Buffer) error {
	if err := g.Group.AllGather(ctx, send, recv); err != nil {
		return err
	}
	roundedComm{dt: g.dt}.round(recv)
	return nil
}

// emulatedCheck runs exec.Check with the reference on exec/cpu and the
// partitioned plan on roundedCPU.
func emulatedCheck(t *testing.T, name string, dt dtype, tol float64) pexec.CheckResult {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	opts := pexec.CheckOptions{
		Tolerance:    tol,
		NewReference: cpuReference,
		NewCompute: func(plan *partition.Plan, rank int) (pexec.Compute, error) {
			return newRoundedCPU(plan, rank, dt)
		},
		NewComms: func(size int) []pexec.Comm {
			out := localcomm.Comms(size)
			for i, c := range out {
				out[i] = roundedComm{c, dt}
			}
			return out
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := pexec.Check(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The tolerance of each element type holds, with room, for the error the
// GPU backend's rounding makes on every test partitioning (docs/gpu.md
// quotes these numbers).
func TestEmulatedRoundingWithinTolerance(t *testing.T) {
	for _, dtName := range []string{"fp16", "bf16"} {
		dt := dtypes[dtName]
		tol := Tolerance(dtName)
		for _, name := range []string{
			"test/single-tiny", "test/tp2pp2-tiny", "test/tp4-tiny", "test/pp4-tiny",
			"test/layerwise16-tiny", "test/tp8pp2-tiny", "test/layermap-tiny",
		} {
			res := emulatedCheck(t, name, dt, tol)
			t.Logf("%s %s: max abs %.3g, max rel %.3g (tolerance %g), argmax mismatches %d of %d",
				dtName, strings.TrimPrefix(name, "test/"), res.MaxAbsErr, res.MaxRelErr, tol,
				len(res.ArgmaxMismatches), res.ArgmaxCompared)
			if err := res.Err(); err != nil {
				t.Errorf("%s %s: %v", dtName, name, err)
			}
			if dtName == "fp16" && res.MaxRelErr < 1e-4 {
				t.Errorf("%s %s: error %.3g is below fp16's rounding: the emulation rounds nothing", dtName, name, res.MaxRelErr)
			}
			if res.MaxRelErr > tol/2 {
				t.Errorf("%s %s: error %.3g leaves less than 2× margin under the tolerance %g", dtName, name, res.MaxRelErr, tol)
			}
		}
	}
}
