package serving

import (
	"fmt"
)

// Scheduling policies.
const (
	// PolicyStatic forms a batch of up to MaxNumSeqs waiting requests,
	// reserves each one's whole context, prefills them together and decodes
	// until the last one finishes; nothing joins a running batch.
	PolicyStatic = "static"
	// PolicyContinuous is vLLM's iteration-level scheduling without chunked
	// prefill: an iteration is either the prefills of newly admitted
	// requests (whole prompts, up to MaxNumBatchedTokens) or one decode
	// token of every running request; prefills go first.
	PolicyContinuous = "continuous"
	// PolicyChunked is chunked prefill (Sarathi-Serve; vLLM's
	// --enable-chunked-prefill): every iteration spends a budget of
	// MaxNumBatchedTokens, decodes first, then the running prefills' next
	// chunks, then new requests' chunks; prefill and decode share a batch.
	PolicyChunked = "chunked"
)

// Policies lists the policies in help order.
var Policies = []string{PolicyContinuous, PolicyChunked, PolicyStatic}

// SchedulerConfig is one replica's scheduler.
type SchedulerConfig struct {
	Policy              string
	MaxNumSeqs          int // sequences in a batch (vLLM --max-num-seqs)
	MaxNumBatchedTokens int // new tokens in an iteration (vLLM --max-num-batched-tokens)
	// BlockSize is tokens per KV block; NumBlocks the blocks the replica's
	// KV cache holds (KVBlocks derives them from the memory model).
	BlockSize int
	NumBlocks int
	// Preemption is how a sequence gives its blocks back when they run out:
	// PreemptRecompute (the default, "") or PreemptSwap into SwapBlocks
	// blocks of host memory (vLLM V0's --preemption-mode swap and
	// --swap-space), falling back to recompute when the swap space is full.
	Preemption string
	SwapBlocks int
}

// Preemption modes.
const (
	PreemptRecompute = "recompute"
	PreemptSwap      = "swap"
)

// Validate names the flag and the allowed values of a wrong field.
func (c SchedulerConfig) Validate() error {
	switch c.Policy {
	case PolicyStatic, PolicyContinuous, PolicyChunked:
	default:
		return fmt.Errorf("--scheduler: must be one of continuous, chunked, static (got %q)", c.Policy)
	}
	if c.MaxNumSeqs < 1 || c.MaxNumSeqs > 1<<20 {
		return fmt.Errorf("--max-num-seqs: must be in [1, %d] (got %d)", 1<<20, c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens < 1 || c.MaxNumBatchedTokens > 1<<24 {
		return fmt.Errorf("--max-num-batched-tokens: must be in [1, %d] (got %d)", 1<<24, c.MaxNumBatchedTokens)
	}
	if c.BlockSize < 1 || c.BlockSize > 1<<16 {
		return fmt.Errorf("--block-size: must be in [1, %d] tokens (got %d)", 1<<16, c.BlockSize)
	}
	switch c.Preemption {
	case "", PreemptRecompute, PreemptSwap:
	default:
		return fmt.Errorf("--preemption-mode: must be recompute or swap (got %q)", c.Preemption)
	}
	if c.SwapBlocks < 0 {
		return fmt.Errorf("--swap-space: must be ≥ 0 (got %d blocks)", c.SwapBlocks)
	}
	if c.NumBlocks < 1 {
		return fmt.Errorf("KV cache: %d blocks of %d tokens: the memory left after weights and activations holds no block (--num-gpu-blocks-override sets it)", c.NumBlocks, c.BlockSize)
	}
	return nil
}

// Seq is one request inside a scheduler.
type Seq struct {
	Req Request
	// Computed is the tokens whose KV entries are in the cache; Generated
	// the output tokens produced. The tokens known are InputLen + Generated;
	// those not yet computed are the next prefill (all of them after a
	// preemption: recompute).
	Computed, Generated int
	Blocks              int // KV blocks held (on the device; in host memory while swapped)
	Preemptions         int
	Swaps               int // preemptions by swap (of Preemptions)
	// Replica is the replica the router sent it to; Slot is free for the
	// driver's bookkeeping.
	Replica int
	Slot    int
}

func (s *Seq) pending() int { return s.Req.InputLen + s.Generated - s.Computed }

// Done reports whether the sequence produced all its output.
func (s *Seq) Done() bool { return s.Generated >= s.Req.OutputLen }

// Scheduled is one sequence's share of an iteration: Q new tokens after
// Past cached ones; Sample when the pass yields its next token.
type Scheduled struct {
	Seq    *Seq
	Q      int
	Past   int
	Sample bool
}

// Scheduler decides each iteration of one replica. It keeps no time: the
// simulator and the server's engine drive it alike (Add, Schedule,
// Complete), so modeled and measured differ only in who runs the
// iteration. Not safe for concurrent use.
type Scheduler struct {
	cfg         SchedulerConfig
	waiting     queue  // FIFO; preempted sequences go back to the front
	running     []*Seq // in admission order; the last is preempted first
	swapped     queue  // swapped out, FIFO; they come back before anything waiting is admitted
	freeBlocks  int
	freeSwap    int
	batch       []Scheduled
	preemptions int
	swaps       int
	// swapTokens is the KV entries the last Schedule moved between device
	// and host (out and in).
	swapTokens int64
	// Released, when set, is told every time a sequence gives up its KV
	// cache: it finished, or was preempted by recompute (an engine frees
	// the sequence's slot).
	Released func(*Seq)
	// staticOpen: a static batch is running and admits nothing.
	staticOpen bool
}

// NewScheduler returns an empty scheduler.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Preemption != PreemptSwap {
		cfg.SwapBlocks = 0
	}
	return &Scheduler{cfg: cfg, freeBlocks: cfg.NumBlocks, freeSwap: cfg.SwapBlocks}, nil
}

func (s *Scheduler) blocksFor(tokens int) int {
	return (tokens + s.cfg.BlockSize - 1) / s.cfg.BlockSize
}

// Add queues a request. A request that can never run is refused with the
// reason: its whole context needs more KV blocks than the replica has, or
// (without chunked prefill) its prompt is over the token budget, which
// vLLM refuses the same way.
func (s *Scheduler) Add(seq *Seq) error {
	r := seq.Req
	if need := s.blocksFor(r.InputLen + r.OutputLen); need > s.cfg.NumBlocks {
		return fmt.Errorf("request %d: %d + %d tokens need %d KV blocks of %d tokens, the replica holds %d", r.ID, r.InputLen, r.OutputLen, need, s.cfg.BlockSize, s.cfg.NumBlocks)
	}
	if s.cfg.Policy != PolicyChunked && r.InputLen > s.cfg.MaxNumBatchedTokens {
		return fmt.Errorf("request %d: prompt of %d tokens is over --max-num-batched-tokens %d (use --scheduler chunked)", r.ID, r.InputLen, s.cfg.MaxNumBatchedTokens)
	}
	s.waiting.push(seq)
	return nil
}

// queue is the waiting line: a FIFO whose front also takes preempted
// sequences back (the latest preempted first, as vLLM prepends them), all
// in O(1).
type queue struct {
	front []*Seq // a stack: its last element is the head of the line
	back  []*Seq
	head  int
}

func (q *queue) len() int { return len(q.front) + len(q.back) - q.head }

func (q *queue) push(s *Seq) { q.back = append(q.back, s) }

func (q *queue) pushFront(s *Seq) { q.front = append(q.front, s) }

func (q *queue) peek() *Seq {
	if n := len(q.front); n > 0 {
		return q.front[n-1]
	}
	return q.back[q.head]
}

func (q *queue) pop() {
	if n := len(q.front); n > 0 {
		q.front[n-1] = nil
		q.front = q.front[:n-1]
		return
	}
	q.back[q.head] = nil
	q.head++
	if q.head > 1024 && q.head*2 > len(q.back) {
		n := copy(q.back, q.back[q.head:])
		clear(q.back[n:])
		q.back, q.head = q.back[:n], 0
	}
}

// Waiting and Running are the queue lengths; Preemptions the sequences
// preempted so far; FreeBlocks the KV blocks not held.
func (s *Scheduler) Waiting() int     { return s.waiting.len() }
func (s *Scheduler) Running() int     { return len(s.running) }
func (s *Scheduler) Preemptions() int { return s.preemptions }

// Swaps is the preemptions that swapped out; SwapTokens the KV entries the
// last Schedule moved between device and host.
func (s *Scheduler) Swaps() int        { return s.swaps }
func (s *Scheduler) SwapTokens() int64 { return s.swapTokens }
func (s *Scheduler) FreeBlocks() int   { return s.freeBlocks }

// Idle reports that the scheduler holds no request.
func (s *Scheduler) Idle() bool {
	return s.waiting.len() == 0 && len(s.running) == 0 && s.swapped.len() == 0
}

// grow makes seq hold blocks for tokens tokens; false if not enough are free.
func (s *Scheduler) grow(seq *Seq, tokens int) bool {
	need := s.blocksFor(tokens) - seq.Blocks
	if need <= 0 {
		return true
	}
	if need > s.freeBlocks {
		return false
	}
	s.freeBlocks -= need
	seq.Blocks += need
	return true
}

func (s *Scheduler) release(seq *Seq) {
	s.freeBlocks += seq.Blocks
	seq.Blocks = 0
	if s.Released != nil {
		s.Released(seq)
	}
}

// preemptLast preempts the most recently admitted running sequence. By
// swap (when the mode says so and host memory has room) its blocks move to
// host memory with their entries, and it waits in the swapped line; by
// recompute its blocks are freed and it goes back to the front of the
// waiting line, to prefill its prompt and the tokens it generated again.
func (s *Scheduler) preemptLast() *Seq {
	v := s.running[len(s.running)-1]
	s.running = s.running[:len(s.running)-1]
	v.Preemptions++
	s.preemptions++
	if s.cfg.Preemption == PreemptSwap && v.Blocks <= s.freeSwap && v.Computed > 0 {
		s.freeBlocks += v.Blocks
		s.freeSwap -= v.Blocks
		s.swapTokens += int64(v.Computed)
		v.Swaps++
		s.swaps++
		s.swapped.push(v)
		return v
	}
	s.release(v)
	v.Computed = 0
	s.waiting.pushFront(v)
	return v
}

// swapIn brings swapped sequences back (FIFO) while device blocks and the
// sequence limit allow; it reports whether any is still out (then nothing
// new is admitted, as vLLM V0 does).
func (s *Scheduler) swapIn() bool {
	for s.swapped.len() > 0 && len(s.running) < s.cfg.MaxNumSeqs {
		v := s.swapped.peek()
		if s.blocksFor(v.Computed+1) > s.freeBlocks {
			break
		}
		s.swapped.pop()
		s.freeSwap += v.Blocks
		s.freeBlocks -= v.Blocks
		s.swapTokens += int64(v.Computed)
		s.running = append(s.running, v)
	}
	return s.swapped.len() > 0
}

// Schedule decides the next iteration; an empty batch means there is
// nothing to run until a request arrives. The batch is valid until the
// next Schedule.
func (s *Scheduler) Schedule() []Scheduled {
	s.batch = s.batch[:0]
	s.swapTokens = 0
	switch s.cfg.Policy {
	case PolicyStatic:
		s.scheduleStatic()
	case PolicyContinuous:
		if s.swapIn() || !s.admitPrefills() {
			s.scheduleDecodes()
		}
	default:
		s.scheduleChunked()
	}
	return s.batch
}

func (s *Scheduler) add(seq *Seq, q int) {
	s.batch = append(s.batch, Scheduled{Seq: seq, Q: q, Past: seq.Computed, Sample: q == seq.pending()})
}

// scheduleStatic: a new batch when the last has finished, its whole
// context reserved at admission (so it never preempts).
func (s *Scheduler) scheduleStatic() {
	if len(s.running) == 0 {
		tokens := 0
		for s.waiting.len() > 0 && len(s.running) < s.cfg.MaxNumSeqs {
			w := s.waiting.peek()
			if len(s.running) > 0 && tokens+w.pending() > s.cfg.MaxNumBatchedTokens {
				break
			}
			if !s.grow(w, w.Req.InputLen+w.Req.OutputLen) {
				break
			}
			tokens += w.pending()
			s.waiting.pop()
			s.running = append(s.running, w)
		}
	}
	for _, r := range s.running {
		s.add(r, r.pending())
	}
}

// admitPrefills schedules whole prompts of waiting sequences (FIFO) while
// the token budget, the sequence limit and free blocks allow; the first
// one may exceed the budget (a recompute of prompt + output).
func (s *Scheduler) admitPrefills() bool {
	tokens := 0
	for s.waiting.len() > 0 && len(s.running) < s.cfg.MaxNumSeqs {
		w := s.waiting.peek()
		p := w.pending()
		if len(s.batch) > 0 && tokens+p > s.cfg.MaxNumBatchedTokens {
			break
		}
		if !s.grow(w, w.Computed+p) {
			break
		}
		tokens += p
		s.waiting.pop()
		s.running = append(s.running, w)
		s.add(w, p)
	}
	return len(s.batch) > 0
}

// scheduleDecodes gives every running sequence its next token, preempting
// from the back while blocks run out.
func (s *Scheduler) scheduleDecodes() {
	for i := 0; i < len(s.running); i++ {
		r := s.running[i]
		for !s.grow(r, r.Computed+1) {
			if s.preemptLast() == r {
				break
			}
		}
		if i < len(s.running) && s.running[i] == r {
			s.add(r, 1)
		}
	}
}

// scheduleChunked spends the token budget on running sequences first (a
// decode token or the next prefill chunk), preempting from the back when
// blocks run out, then admits waiting ones chunk by chunk unless this
// iteration preempted.
func (s *Scheduler) scheduleChunked() {
	budget := s.cfg.MaxNumBatchedTokens
	preempted := s.swapIn()
	for i := 0; i < len(s.running) && budget > 0; i++ {
		r := s.running[i]
		q := min(r.pending(), budget)
		ok := true
		for !s.grow(r, r.Computed+q) {
			preempted = true
			if s.preemptLast() == r {
				ok = false
				break
			}
		}
		if ok {
			s.add(r, q)
			budget -= q
		}
	}
	for !preempted && budget > 0 && s.waiting.len() > 0 && len(s.running) < s.cfg.MaxNumSeqs {
		w := s.waiting.peek()
		q := min(w.pending(), budget)
		if !s.grow(w, w.Computed+q) {
			break
		}
		s.waiting.pop()
		s.running = append(s.running, w)
		s.add(w, q)
		budget -= q
	}
}

// Complete applies the last scheduled iteration: computed tokens enter the
// cache, sampling sequences gain a token, and finished ones leave and free
// their blocks. emit is called for every token produced, in batch order,
// with done set on a sequence's last token.
func (s *Scheduler) Complete(emit func(seq *Seq, done bool)) {
	finished := false
	for _, b := range s.batch {
		b.Seq.Computed += b.Q
		if b.Sample {
			b.Seq.Generated++
			done := b.Seq.Done()
			finished = finished || done
			emit(b.Seq, done)
		}
	}
	if !finished {
		return
	}
	kept := s.running[:0]
	for _, r := range s.running {
		if r.Done() {
			s.release(r)
			continue
		}
		kept = append(kept, r)
	}
	clear(s.running[len(kept):])
	s.running = kept
}

// remove takes s out of the line; false if it is not in it.
func (q *queue) remove(s *Seq) bool {
	for i, x := range q.front {
		if x == s {
			q.front = append(q.front[:i], q.front[i+1:]...)
			return true
		}
	}
	for i := q.head; i < len(q.back); i++ {
		if q.back[i] == s {
			q.back = append(q.back[:i], q.back[i+1:]...)
			return true
		}
	}
	return false
}

// Abort takes an unfinished sequence out of the scheduler between
// iterations (its client went away): it leaves whichever line holds it and
// its KV blocks (on the device, or in host memory while swapped) are freed,
// and Released is told. It reports whether the scheduler held it.
func (s *Scheduler) Abort(seq *Seq) bool {
	for i, r := range s.running {
		if r == seq {
			s.running = append(s.running[:i], s.running[i+1:]...)
			s.release(seq)
			return true
		}
	}
	if s.swapped.remove(seq) {
		s.freeSwap += seq.Blocks
		seq.Blocks = 0
		if s.Released != nil {
			s.Released(seq)
		}
		return true
	}
	if s.waiting.remove(seq) {
		// A sequence waiting holds no block (a preempted one gave them back).
		s.release(seq)
		return true
	}
	return false
}
