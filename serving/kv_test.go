package serving

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/sim"
)

// Llama-2-7B, fp16, on one H100 (serving/testdata/llama2-7b-h100.toml):
//
//	KV per token: 32 layers × 2 × 4,096 × 2 B                    = 524,288 B
//	usable HBM: 85,520,809,984 − 2,147,483,648                  = 83,373,326,336 B
//	weights: 6,738,415,616 parameters × 2 B                     = 13,476,831,232 B
//	activations (prefill chunk 3,968 tokens, 1 logit row): x, h, y;
//	qkv (3·4,096) and u (2·11,008) in one region, ao (4,096) and a
//	(11,008) in another; token ids as float32; the logits row:
//	  (3·4,096 + 22,016 + 11,008) × 2 B × 3,968 + 3,968 × 4 B
//	  + 32,000 × 2 B                                            = 359,675,904 B
//	free × 0.9 = (83,373,326,336 − 13,476,831,232 − 359,675,904) × 0.9
//	                                                            = 62,583,137,280 B
//	tokens: ⌊62,583,137,280 / 524,288⌋ = 119,367; blocks of 16: 7,460.
func TestKVBlocksFromMemoryModel(t *testing.T) {
	p := loadPlan(t, "testdata/llama2-7b-h100.toml")
	kv, err := KVBlocks(p, 16, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if kv.BytesPerToken != 524_288 || kv.FreeBytes != 62_583_137_280 || kv.NumBlocks != 7_460 {
		t.Errorf("KV cache %+v; want 524288 B/token, 62583137280 B free, 7460 blocks", kv)
	}
	for _, tc := range []struct {
		block int
		util  float64
		want  string
	}{{0, 0.9, "--block-size"}, {16, 0, "--gpu-memory-utilization"}, {16, 1.01, "--gpu-memory-utilization"}} {
		if _, err := KVBlocks(p, tc.block, tc.util); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("block %d, utilization %g: %v", tc.block, tc.util, err)
		}
	}
}

// Static batching admits nothing into a running batch: with two sequences
// per batch and 1 s per iteration, requests 0 (1 output token) and 1 (3)
// form the first batch; request 2 (1 token), there from t = 0, waits until
// request 1 finishes at t = 3 and gets its token at t = 4. Continuous
// batching admits it at the first iteration boundary (t = 1, a prefill-only
// iteration ending at t = 2).
func TestStaticVersusContinuous(t *testing.T) {
	reqs := []Request{{ID: 0, InputLen: 4, OutputLen: 1}, {ID: 1, InputLen: 4, OutputLen: 3}, {ID: 2, InputLen: 4, OutputLen: 1}}
	for _, tc := range []struct {
		policy string
		want   float64
	}{{PolicyStatic, 4}, {PolicyContinuous, 2}} {
		cfg := cfgOf(tc.policy, 2, 64, 100)
		res, err := Simulate(reqs, cfg, &constCost{t: t, s: 1, cfg: cfg.Scheduler})
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, res)
		if got := res.Requests[2].FirstTokenS; got != tc.want {
			t.Errorf("%s: request 2's token at %g s, want %g", tc.policy, got, tc.want)
		}
	}
}

// The trace reader never panics and either errors or returns requests
// whose fields hold what it promises. `go test` runs the seeds; fuzz at
// most 20 s (`-fuzz FuzzParseTrace -fuzztime 20s`).
func FuzzParseTrace(f *testing.F) {
	f.Add(`{"arrival_s": 0, "input_len": 1, "output_len": 1}`)
	f.Add("{\"arrival_s\": 1e308, \"input_len\": 2, \"output_len\": 3}\n\n{\"arrival_s\": 0}")
	f.Add(`{"arrival_s": -0, "input_len": 9223372036854775807, "output_len": 1}`)
	f.Fuzz(func(t *testing.T, text string) {
		reqs, err := parseTrace(strings.NewReader(text), "f.jsonl")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--trace f.jsonl") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		last := 0.0
		for i, r := range reqs {
			if r.ID != i || r.ArrivalS < last || r.InputLen < 1 || r.OutputLen < 1 {
				t.Fatalf("request %d: %+v", i, r)
			}
			last = r.ArrivalS
		}
	})
}

// tokenCounter prices every iteration at 10 ms and sums the tokens and
// swapped KV entries it was asked to price.
type tokenCounter struct {
	tokens, swapped int64
}

func (c *tokenCounter) TimeS(sh sim.IterationShape) (float64, error) {
	c.tokens += int64(sh.Tokens)
	c.swapped += sh.SwapTokens
	return 0.01, nil
}

// Preemption by swap keeps a sequence's KV entries: the four 100 + 200
// token requests of TestKVExhaustionPreempts, squeezed into 40 blocks,
// compute exactly 4 × 100 prompt + 4 × 199 decode tokens = 1,196, as
// without any preemption, and move entries to the host and back. By
// recompute they compute more (prompts and generated tokens again). With
// no swap space, swap mode falls back to recompute.
func TestSwapPreemption(t *testing.T) {
	reqs := make([]Request, 4)
	for i := range reqs {
		reqs[i] = Request{ID: i, InputLen: 100, OutputLen: 200}
	}
	for _, policy := range []string{PolicyContinuous, PolicyChunked} {
		for _, tc := range []struct {
			mode      string
			swap      int
			recompute bool
		}{{PreemptSwap, 100, false}, {PreemptRecompute, 100, true}, {PreemptSwap, 0, true}} {
			cfg := cfgOf(policy, 8, 512, 40)
			cfg.Scheduler.Preemption, cfg.Scheduler.SwapBlocks = tc.mode, tc.swap
			c := &tokenCounter{}
			res, err := Simulate(reqs, cfg, c)
			if err != nil {
				t.Fatal(err)
			}
			m := checkRun(t, res)
			if m.Completed != 4 || res.Preemptions == 0 {
				t.Fatalf("%s %s swap %d: %d completed, %d preemptions", policy, tc.mode, tc.swap, m.Completed, res.Preemptions)
			}
			swapped := res.Swaps == res.Preemptions && c.swapped > 0 && c.tokens == 1196
			recomputed := res.Swaps == 0 && c.swapped == 0 && c.tokens > 1196
			if tc.recompute && !recomputed || !tc.recompute && !swapped {
				t.Errorf("%s %s swap space %d: %d preemptions, %d swaps, %d tokens computed, %d swapped",
					policy, tc.mode, tc.swap, res.Preemptions, res.Swaps, c.tokens, c.swapped)
			}
		}
	}
}

// Abort frees what a sequence holds wherever it is: blocks of 4 tokens,
// 10 in all, chunked prefill with a budget of 8. Iteration 1 admits a
// (prompt 6: 2 blocks) and the first 2 tokens of b (1 block); c waits.
// Aborting b (running) gives its block back: 10 − 2 = 8 free; aborting c
// (waiting, no block) changes nothing; a swapped sequence gives its host
// blocks back; a sequence the scheduler does not hold is not aborted; and
// Released is told of the aborted running sequence (its slot).
func TestAbortFreesBlocks(t *testing.T) {
	s, err := NewScheduler(SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, NumBlocks: 10,
		Preemption: PreemptSwap, SwapBlocks: 10})
	if err != nil {
		t.Fatal(err)
	}
	released := 0
	s.Released = func(*Seq) { released++ }
	a := &Seq{Req: Request{ID: 0, InputLen: 6, OutputLen: 4}}
	b := &Seq{Req: Request{ID: 1, InputLen: 5, OutputLen: 4}}
	c := &Seq{Req: Request{ID: 2, InputLen: 3, OutputLen: 4}}
	for _, q := range []*Seq{a, b, c} {
		if err := s.Add(q); err != nil {
			t.Fatal(err)
		}
	}
	batch := s.Schedule()
	if len(batch) != 2 || s.FreeBlocks() != 7 || b.Blocks != 1 {
		t.Fatalf("iteration 1: %d scheduled, %d blocks free, b holds %d (want 2, 7, 1)", len(batch), s.FreeBlocks(), b.Blocks)
	}
	s.Complete(func(*Seq, bool) {})
	if !s.Abort(b) || s.FreeBlocks() != 8 || b.Blocks != 0 || s.Running() != 1 || released != 1 {
		t.Errorf("after aborting b: %d free, b holds %d, %d running, %d released (want 8, 0, 1, 1)", s.FreeBlocks(), b.Blocks, s.Running(), released)
	}
	if !s.Abort(c) || s.FreeBlocks() != 8 || s.Waiting() != 0 {
		t.Errorf("after aborting c: %d free, %d waiting (want 8, 0)", s.FreeBlocks(), s.Waiting())
	}
	if s.Abort(c) {
		t.Error("c aborted twice")
	}
	// a swapped out: its 2 blocks move to host memory; aborting it there
	// gives them back to the swap space.
	s.running = s.running[:0]
	s.running = append(s.running, a)
	s.preemptLast()
	if s.freeSwap != 8 || s.FreeBlocks() != 10 {
		t.Fatalf("a swapped: %d swap blocks free, %d device blocks free (want 8, 10)", s.freeSwap, s.FreeBlocks())
	}
	if !s.Abort(a) || s.freeSwap != 10 || !s.Idle() {
		t.Errorf("after aborting a swapped: %d swap blocks free, idle %v (want 10, true)", s.freeSwap, s.Idle())
	}
}
