//go:build cgo

package cuda

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// flashPlan is single-tiny with one layer of 4 query heads and 2 KV heads
// of head dim hd, 2 sequences and a 76-token prompt (context 80, 4 output
// tokens): a prefill long enough for the tensor-core kernel.
func flashPlan(t *testing.T, hd int) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := &cfg.Model
	m.Layers, m.Heads, m.KVHeads, m.HeadDim, m.Hidden, m.FFN = 1, 4, 2, hd, 4*hd, 64
	cfg.Workload.Batch, cfg.Workload.Context, cfg.Workload.OutputTokens = 2, 80, 4
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// runPhase runs every compute op of rank 0's Program of phase at past and
// returns the timing entries' names.
func runPhase(t *testing.T, c *Compute, plan *partition.Plan, phase partition.Phase, past int) []string {
	t.Helper()
	prog := plan.Program(0, phase)
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if _, comm := op.Kind.Comm(); comm {
			continue
		}
		if err := c.Exec(context.Background(), op, past); err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
	}
	times, err := c.OpTimes()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ot := range times {
		names = append(names, ot.Name)
	}
	return names
}

// On the fake driver (an sm_90 device) an fp16 prefill of 76 queries with
// head dim 128 runs on pb_flash_fwd_d128 and its timing entry says so. Its
// 87,040 bytes of dynamic shared memory exceed the 48 KiB default, which
// the fake driver refuses unless cuFuncSetAttribute raised the kernel's
// limit: the launch going through proves the backend raised it. Decode
// (one query) stays on pb_attention_vV, and fp32 and head dim 64 choose as
// the shape rules say.
func TestFlashChosenByShapeOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	cases := []struct {
		dt        string
		hd        int
		wantFlash bool
		why       string
	}{
		{"fp16", 128, true, ""},
		{"bf16", 64, true, ""},
		{"fp32", 128, false, "fp32 has no m16n8k16 mma"},
	}
	for _, tc := range cases {
		plan := flashPlan(t, tc.hd)
		c := fakeCompute(t, plan, 0, Options{DType: tc.dt})
		_, ok, why := c.FlashAttention()
		if ok != tc.wantFlash || why != tc.why {
			t.Errorf("%s hd %d: flash %v (%q), want %v (%q)", tc.dt, tc.hd, ok, why, tc.wantFlash, tc.why)
		}
		names := runPhase(t, c, plan, partition.Prefill, 0)
		tag := fmt.Sprintf(" [flash d%d b64]", tc.hd) // 76 queries: one 64-query tile and a partial one
		var tagged int
		for _, n := range names {
			if strings.HasSuffix(n, tag) {
				tagged++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[tc.wantFlash]; tagged != want {
			t.Errorf("%s hd %d prefill: %d timing entries end in %q, want %d (entries %v)", tc.dt, tc.hd, tagged, tag, want, names)
		}
		if tc.wantFlash {
			if got, want := c.flash.shared[flashKey{tc.hd, 64}], (64+4*64)*(tc.hd+8)*2; got != want {
				t.Errorf("%s hd %d: dynamic shared memory %d, want %d", tc.dt, tc.hd, got, want)
			}
		}
		c.ResetTimes()
		past := plan.Config.Workload.PromptTokens()
		for _, n := range runPhase(t, c, plan, partition.Decode, past) {
			if strings.Contains(n, "[flash") {
				t.Errorf("%s hd %d decode: %q ran on the prefill kernel", tc.dt, tc.hd, n)
			}
		}
	}
}

// On the fake driver (132 SMs) a decode step of one sequence with 4 query
// heads over a 2048-position cache is split: 4 (row, head) pairs want
// ⌈768·132/(4·128)⌉ = 198 splits to keep 768 threads per SM, capped at
// ⌈2048/64⌉ = 32 by the shortest planned split; the workspace holds
// 1·4·32 partials of 2 + 64 floats = 33792 bytes and pb_splitkv_vV's
// count per (row, head), 4·4 = 16 bytes, beside the rotary table of 2048
// positions · 32 pairs · 8 bytes = 524288. Prefill (76 queries) is not
// split. The decode attention is one launch (pb_splitkv_v8, partials and
// merge); Without splitkv-one-launch it is two and the count is not
// allocated.
func TestSplitKVChosenOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := &cfg.Model
	m.Layers, m.Heads, m.KVHeads, m.HeadDim, m.Hidden, m.FFN = 1, 4, 2, 64, 256, 64
	cfg.Workload.Batch, cfg.Workload.Context, cfg.Workload.OutputTokens = 1, 2048, 4
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := fakeCompute(t, plan, 0, Options{DType: "fp16"})
	two := fakeCompute(t, plan, 0, Options{DType: "fp16", Without: "splitkv-one-launch"})
	if ws, want := two.AllocatedByKind()["workspace"], int64(8+cublasWorkspaceBytes+33792+524288); ws != want {
		t.Errorf("Without splitkv-one-launch: workspace %d bytes, want %d", ws, want)
	}
	prompt := plan.Config.Workload.PromptTokens()
	var launches [2]int64
	for i, cc := range []*Compute{c, two} {
		runPhase(t, cc, plan, partition.Prefill, 0)
		if err := cc.ResetTimes(); err != nil {
			t.Fatal(err)
		}
		runPhase(t, cc, plan, partition.Decode, prompt)
		launches[i] = cc.LaunchStats().Launches
		if err := cc.ResetTimes(); err != nil {
			t.Fatal(err)
		}
	}
	if launches[1]-launches[0] != 1 {
		t.Errorf("a decode step: %d launches in one, %d in two: want one fewer (the merge)", launches[0], launches[1])
	}
	if ws, want := c.AllocatedByKind()["workspace"], int64(8+cublasWorkspaceBytes+33792+16+524288); ws != want {
		t.Errorf("workspace %d bytes, want %d (error flag, cuBLAS, split-KV partials, rotary table)", ws, want)
	}
	for _, n := range runPhase(t, c, plan, partition.Prefill, 0) {
		if strings.Contains(n, "split-kv") {
			t.Errorf("prefill entry %q is split", n)
		}
	}
	c.ResetTimes()
	var split int
	for _, n := range runPhase(t, c, plan, partition.Decode, plan.Config.Workload.PromptTokens()) {
		if strings.HasSuffix(n, " [split-kv S=32]") {
			split++
		}
	}
	if split != 1 {
		t.Errorf("%d decode entries split 32 ways, want 1 (the layer's attention)", split)
	}
}

// flashTile takes 128-query tiles where the prefill fills them and they
// still make a block per SM.
func TestFlashTile(t *testing.T) {
	for _, tc := range []struct{ q, seqs, hl, sms, want int }{
		{2048, 16, 32, 132, 128}, // seed prefill: 16·16·32 = 8192 blocks of 128
		{2048, 1, 4, 132, 64},    // 1·16·4 = 64 blocks of 128 < 132 SMs: 128 blocks of 64
		{76, 2, 4, 132, 64},      // fewer than 128 queries
		{256, 2, 33, 132, 128},   // 2·2·33 = 132 blocks: exactly one per SM
		{256, 2, 32, 132, 64},    // 128 blocks: one SM idle
	} {
		if got := flashTile(tc.q, tc.seqs, tc.hl, tc.sms); got != tc.want {
			t.Errorf("flashTile(q %d, seqs %d, heads %d, %d SMs) = %d, want %d", tc.q, tc.seqs, tc.hl, tc.sms, got, tc.want)
		}
	}
	if flashKernelName(128, 128) != "pb_flash_fwd_d128_b128" || flashKernelName(64, 64) != "pb_flash_fwd_d64" {
		t.Error("flash kernel names")
	}
}

func TestSplitKVCount(t *testing.T) {
	// The target is 768 threads × 132 SMs = 101,376; unsplit, a pair is a
	// block of 256 threads, a split one of 128.
	for _, tc := range []struct{ sms, pairs, context, want int }{
		{132, 4, 2048, 32},      // ⌈101376/512⌉ = 198; 2048/64 = 32 caps it
		{132, 32, 2048, 25},     // seed at batch 1 (32 heads): 32·256 = 8192 < 101376; ⌈101376/4096⌉ = 25 < 32
		{132, 32, 8192, 25},     // the same with a longer cache (cap 128): still 25
		{132, 8 * 32, 2048, 4},  // batch 8: 65,536 threads unsplit; ⌈101376/32768⌉ = 4
		{132, 16 * 32, 2048, 1}, // batch 16: 512·256 = 131,072 threads ≥ 101,376 unsplit
		{132, 396, 2048, 1},     // 396·256 = 101,376: exactly the target, not split
		{132, 395, 2048, 3},     // one pair fewer: split, ⌈101376/(395·128)⌉ = ⌈2.005⌉ = 3
		{132, 1, 1 << 20, 64},   // one pair, a huge cache: the cap
		{132, 4, 100, 2},        // a short cache: ⌈100/64⌉ = 2
		{132, 4, 64, 1},         // one split's worth of keys
		{0, 4, 2048, 1},         // no SM count known
	} {
		if got := splitKVCount(tc.sms, tc.pairs, tc.context); got != tc.want {
			t.Errorf("splitKVCount(%d SMs, %d pairs, context %d) = %d, want %d", tc.sms, tc.pairs, tc.context, got, tc.want)
		}
	}
}

// Every kernel of flash.cu and the second module has a launch bound, the
// flash kernels' the dynamic shared memory flash.go asks for (hd 128 above
// 48 KiB: raised), and a launch beyond a bound is refused.
func TestExtraLaunchBounds(t *testing.T) {
	for _, fk := range flashAllKernels() {
		b, ok := extraLaunch[fk.name()]
		threads := 2 * fk.br // 16 rows per warp: br/16 warps
		if fk.v.warpRows == 32 {
			threads = fk.br // 32 rows per warp
		}
		if want := (fk.br + 4*64) * (fk.hd + 8) * 2; !ok || b.dynSmem != want || b.threads != threads || b.optIn != (want > 48<<10) {
			t.Errorf("%+v: bound %+v, want %d threads and %d bytes", fk, b, threads, want)
		}
	}
	for _, name := range []string{"pb_splitkv_merge", "pb_rope_kv_table", "pb_gen", "pb_add_rmsnorm", "pb_add_layernorm", "pb_splitkv_partial_v8"} {
		if _, ok := extraLaunch[name]; !ok {
			t.Errorf("no bound for %s", name)
		}
	}
	if err := checkExtraLaunch("pb_flash_fwd_d128", 128, 87040); err != nil {
		t.Error(err)
	}
	if err := checkExtraLaunch("pb_flash_fwd_d128", 128, 87041); err == nil {
		t.Error("a flash launch one byte above its shared memory bound passed")
	}
	if err := checkExtraLaunch("pb_gen", 512, 0); err == nil {
		t.Error("pb_gen with 512 threads passed a bound of 256")
	}
	if err := checkExtraLaunch("pb_nope", 1, 0); err == nil {
		t.Error("a kernel without a bound passed")
	}
}

// pb_rope_kv_table's blocks per row: a row has (hl + kvl)·hd/2 pairs and
// kvl·hd v elements, one per thread of 256.
func TestRopeBlocksPerRow(t *testing.T) {
	for _, tc := range []struct{ rows, hl, kvl, hd, sms, want int }{
		{1, 32, 32, 128, 132, 32},    // seed decode, batch 1: (64·64 + 4096)/256 = 32 ≤ 528 blocks of room
		{16, 32, 32, 128, 132, 32},   // batch 16: room ⌈528/16⌉ = 33
		{32, 32, 32, 128, 132, 17},   // batch 32: room ⌈528/32⌉ = 17 < 32
		{32512, 32, 32, 128, 132, 1}, // seed prefill: the rows fill the device
		{4, 8, 4, 8, 132, 1},         // tiny: (12·4 + 32)/256 → 1
		{1, 32, 32, 128, 0, 4},       // no SM count: room for 4 blocks
	} {
		op := &partition.Op{Rows: tc.rows, Heads: tc.hl, KVHeads: tc.kvl, HeadDim: tc.hd}
		if got := ropeBlocksPerRow(op, tc.sms); got != tc.want {
			t.Errorf("%+v: %d blocks per row, want %d", tc, got, tc.want)
		}
	}
}
