//go:build cgo

package cuda

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// gemvPlanTiny is single-tiny with one layer of hidden 512 (8 heads of 64,
// 4 KV heads), a gated MLP of 1024, batch 4 in one micro-batch: decode
// GEMMs of M 4 with K ≥ 512, so the fake H100's 132 SMs split them.
// By hand (gemvPlanFor: 528 blocks wanted, splits ≤ K/256, chunk ⌈K/S⌉):
//
//	wqkv   K 512  N 1024 (8+2·4)·64: 16 tiles, 2 splits of 256
//	wo     K 512  N 512:              8 tiles, 2 splits
//	w_up   K 512  N 2048 (up+gate):  32 tiles, 2 splits
//	w_down K 1024 N 512:              8 tiles, 4 splits
//	lm_head K 512 N 96:               2 tiles, 2 splits
//
// workspace = max S·M·N·4 = 2·4·2048·4 = 65536 bytes (w_up), counts =
// the most tiles of a split GEMM = 32 (w_up): 128 bytes.
func gemvPlanTiny(t *testing.T) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := &cfg.Model
	m.Layers, m.Heads, m.KVHeads, m.HeadDim, m.Hidden, m.FFN = 1, 8, 4, 64, 512, 1024
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// gemvTinySplits are the splits by hand of gemvPlanTiny's decode GEMMs, by (K, N).
var gemvTinySplits = map[[2]int]int{{512, 1024}: 2, {512, 512}: 2, {512, 2048}: 2, {1024, 512}: 4, {512, 96}: 2}

// With $PARTBENCH_GEMV=on every GEMM of M ≤ 8 runs on pb_gemv_mMM with the
// hand-derived plan: its launch's parameters, its timing entry's tag, the
// workspace, one launch per GEMM as cuBLAS's, and decode steps captured in
// CUDA graphs and replayed. The prefill's GEMMs (80 rows) stay on cuBLAS.
func TestGemvOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	plan := gemvPlanTiny(t)
	prompt := plan.Config.Workload.PromptTokens()
	var launches [2]int64
	var wsBytes [2]int64
	for i, mode := range []string{"off", "on"} {
		t.Setenv(gemvEnv, mode)
		c := fakeCompute(t, plan, 0, Options{DType: "fp16", Graphs: true, GraphAfter: 1})
		wsBytes[i] = c.AllocatedByKind()[pexec.AllocWorkspace]
		runPhase(t, c, plan, partition.Prefill, 0)
		if err := c.ResetTimes(); err != nil {
			t.Fatal(err)
		}
		n0 := c.LaunchStats().Launches
		prog := plan.Program(0, partition.Decode)
		for j := range prog.Ops {
			op := &prog.Ops[j]
			if _, comm := op.Kind.Comm(); comm {
				continue
			}
			if err := c.Exec(t.Context(), op, prompt); err != nil {
				t.Fatalf("%s %s: %v", mode, op.Name, err)
			}
			if op.Kind != partition.Gemm || mode != "on" {
				continue
			}
			s, ok := gemvTinySplits[[2]int{op.K, op.N}]
			if !ok || op.Rows != 4 {
				t.Fatalf("%s: M %d K %d N %d is not in the hand count", op.Name, op.Rows, op.K, op.N)
			}
			// The op's last launch (no bias: llama) is the GEMV's:
			// x, w, ws, out, count, M, K, N, chunk.
			a := &c.argBuf
			chunk := (op.K/s + 7) / 8 * 8
			want := []cuda.Arg{cuda.I32(4), cuda.I32(int32(op.K)), cuda.I32(int32(op.N)), cuda.I32(int32(chunk))}
			if string(a.sig[:a.n]) != gemvSig || !slices.Equal(a.vals[5:9], want) || a.vals[2] != cuda.Ptr(c.gemv.ws) || a.vals[4] != cuda.Ptr(c.gemv.count) {
				t.Errorf("%s: launched %q %v, want %s with M, K, N, chunk %v and the workspace", op.Name, a.sig[:a.n], a.vals[:a.n], gemvSig, want)
			}
		}
		launches[i] = c.LaunchStats().Launches - n0
		times, err := c.OpTimes()
		if err != nil {
			t.Fatal(err)
		}
		var tagged []string
		for _, ot := range times {
			if strings.Contains(ot.Name, "[gemv") {
				tagged = append(tagged, ot.Name)
			}
		}
		if mode == "on" {
			for _, name := range []string{"L00.wqkv [gemv S=2]", "L00.wo [gemv S=2]", "L00.w_up [gemv S=2]", "L00.w_down [gemv S=4]", "lm_head [gemv S=2]"} {
				if !slices.Contains(tagged, name) {
					t.Errorf("no timing entry %q (tagged: %s)", name, strings.Join(tagged, ", "))
				}
			}
			// The GEMV's part of Describe (up to the bias epilogue's):
			// every shape on the GEMV, none on cuBLAS.
			d := c.Describe()
			g := d[max(strings.Index(d, "gemv on:"), 0):]
			if i := strings.Index(g, ", bias epilogue"); i >= 0 {
				g = g[:i]
			}
			if !strings.HasPrefix(g, "gemv on: M4 K512 N96 gemv S=2") || strings.Contains(g, "cublas") {
				t.Errorf("Describe: %s", d)
			}
		} else if len(tagged) > 0 || !strings.Contains(c.Describe(), "gemv off") {
			t.Errorf("off: tagged %v, Describe %s", tagged, c.Describe())
		}
		// Steps 2 and 3: captured, then replayed.
		for step := 1; step <= 2; step++ {
			runPhase(t, c, plan, partition.Decode, prompt+step)
		}
		if s := c.LaunchStats(); s.GraphsCaptured == 0 || s.CaptureFailures != 0 || s.GraphLaunches == 0 {
			t.Errorf("%s: graphs %+v", mode, s)
		}
	}
	if launches[0] != launches[1] {
		t.Errorf("a decode step launched %d times on cuBLAS, %d on the GEMV: want one launch per GEMM either way", launches[0], launches[1])
	}
	if d := wsBytes[1] - wsBytes[0]; d != 65536+128 {
		t.Errorf("the GEMV's workspace is %d bytes, want 65536 + 128 (hand count)", d)
	}
}

// $PARTBENCH_GEMV=auto (the default) times both on every shape at setup.
// The fake's event clock: each record 0.25 ms after the last and, with
// FAKE_KERNEL_MS=0.5, each kernel launch 0.5 ms (cuBLAS's fake launches
// none): a sample of 5 GEMV calls spans 5·0.5 + 0.25 = 2.75 ms, 0.55 ms a
// call; of 5 cuBLAS calls 0.25 ms, 0.05 ms a call. cuBLAS wins every shape,
// so nothing is tagged and no workspace is kept.
func TestGemvAutoTimesOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv("FAKE_KERNEL_MS", "0.5")
	plan := gemvPlanTiny(t)
	t.Setenv(gemvEnv, "off")
	off := fakeCompute(t, plan, 0, Options{DType: "bf16"}).AllocatedBytes()
	t.Setenv(gemvEnv, "")
	c := fakeCompute(t, plan, 0, Options{DType: "bf16"})
	if len(c.gemv.shapes) != len(gemvTinySplits) {
		t.Fatalf("%d shapes timed, want %d", len(c.gemv.shapes), len(gemvTinySplits))
	}
	for sh, ch := range c.gemv.shapes {
		if ch.use || math.Abs(ch.gemvS-0.55e-3) > 1e-9 || math.Abs(ch.blasS-0.05e-3) > 1e-9 {
			t.Errorf("M %d K %d N %d: use %v, GEMV %g s, cuBLAS %g s; want cuBLAS, 5.5e-4 and 5e-5", sh.m, sh.k, sh.n, ch.use, ch.gemvS, ch.blasS)
		}
	}
	if d := c.Describe(); !strings.Contains(d, "gemv auto: M4 K512 N96 cublas (gemv 550.0 µs, cublas 50.0 µs)") {
		t.Errorf("Describe: %s", d)
	}
	if got := c.AllocatedBytes(); got != off {
		t.Errorf("auto with cuBLAS everywhere allocated %d bytes, off %d", got, off)
	}
	names := runPhase(t, c, plan, partition.Decode, plan.Config.Workload.PromptTokens())
	for _, n := range names {
		if strings.Contains(n, "[gemv") {
			t.Errorf("timing entry %q: cuBLAS was chosen", n)
		}
	}
}

// A bad $PARTBENCH_GEMV stops New with the variable, the value and the choices.
func TestGemvBadEnvOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv(gemvEnv, "always")
	_, err := New(tinyPlan(t, "test/single-tiny"), 0, Options{DType: "fp16"})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s=%q", gemvEnv, "always")) || !strings.Contains(err.Error(), "auto, on, off") {
		t.Errorf("err = %v", err)
	}
}
