//go:build cgo

package backend

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
)

// A traced run names the kernel the GPU backend chose by shape: on the
// fake driver (sm_90) an fp16 prefill of 76 queries per sequence with head
// dim 64 runs its attention on pb_flash_fwd_d64 (64-query tiles), and the
// span says so; decode attention (one query over 76–79 cached keys) is
// named by its kernel too: pb_attention alone, or split over the cache.
func TestCudaTraceNamesTheAttentionKernel(t *testing.T) {
	base, addr := fakeGPURun(t, "test/single-tiny", 1)
	cfg := *base.Config
	m := &cfg.Model
	m.Layers, m.Heads, m.KVHeads, m.HeadDim, m.Hidden, m.FFN = 1, 4, 2, 64, 256, 64
	cfg.Workload.Batch, cfg.Workload.Context, cfg.Workload.OutputTokens = 2, 80, 4
	cfg.Parallel.Microbatches = 1
	plan, err := partition.NewPlan(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := runFakeRank0(t, plan, addr, 1, nil)
	var flash, plain int
	for _, s := range r.Spans {
		if s.Kind != string(partition.Attention) {
			continue
		}
		switch {
		case s.Phase == string(partition.Prefill) && s.Name == "L00.attn [flash d64 b64]":
			flash++
		case s.Phase == string(partition.Decode) && (s.Name == "L00.attn" || strings.HasPrefix(s.Name, "L00.attn [split-kv S=")):
			plain++ // one kernel or split over the cache (76 keys here), named either way
		default:
			t.Errorf("attention span %q in %s", s.Name, s.Phase)
		}
	}
	if flash != 1 || plain != 1 {
		t.Errorf("%d prefill spans on flash, %d decode spans on pb_attention or split-KV: want 1 and 1", flash, plain)
	}
	if d := r.Device; !strings.Contains(d, "flash attention cubin sm_90") {
		t.Errorf("device %q does not name the flash module", d)
	}
}
