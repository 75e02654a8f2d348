package serving

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The engine as a server: the scheduler and an Executor behind an
// OpenAI-style streaming completions endpoint (the subset vLLM's
// benchmark_serving sends: POST /v1/completions with a token-id prompt,
// max_tokens, stream and ignore_eos), so the load generator measures it
// at the client exactly as it would measure vLLM.

// MaxPromptTokens and MaxOutputTokens bound one request to the server.
const (
	MaxPromptTokens = 1 << 20
	MaxOutputTokens = 1 << 20
	maxBodyBytes    = 64 << 20
	// MaxInFlight bounds the requests the server holds at once (queued and
	// running); more get 503.
	MaxInFlight = 4096
)

// completionRequest is the part of an OpenAI completions request the
// engine reads.
type completionRequest struct {
	Model     string          `json:"model"`
	Prompt    json.RawMessage `json:"prompt"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	IgnoreEOS bool            `json:"ignore_eos"`
}

// promptTokens reads a prompt of token ids, or counts a text prompt's
// tokens as ReadShareGPT does.
func promptTokens(raw json.RawMessage) (int, error) {
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil {
		return len(ids), nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return approxTokens(text), nil
	}
	return 0, fmt.Errorf("prompt: want a string or an array of token ids")
}

type submission struct {
	seq    *Seq
	events chan tokenEvent
	// gone is closed when the client went away: the engine aborts the
	// sequence at its next iteration boundary and frees its KV blocks.
	gone <-chan struct{}
}

type tokenEvent struct {
	token int
	done  bool
	err   error
}

// EngineStats is the engine loop's state after its last step.
type EngineStats struct {
	Waiting, Running int
	// FreeBlocks and NumBlocks are the scheduler's KV blocks free and in
	// all; FreeSlots and Slots the executor's (when it says).
	FreeBlocks, NumBlocks int
	FreeSlots, Slots      int
	// Iterations run; Aborted sequences whose client went away before
	// their last token.
	Iterations int64
	Aborted    int
}

// slotCounter is an Executor that says how many sequences it holds.
type slotCounter interface {
	Slots() int
	FreeSlots() int
}

// EngineServer runs one scheduler over an Executor and serves requests:
// over HTTP (ServeHTTP) and to any transport through Generate. Its engine
// loop is the only goroutine that touches the scheduler and the executor.
type EngineServer struct {
	cfg Config
	ex  Executor
	// maxContext is the tokens one sequence may reach (its KV slot).
	maxContext int
	submit     chan submission
	inFlight   chan struct{}
	mu         sync.Mutex
	nextID     int
	stats      EngineStats
	httpIDs    atomic.Int64
}

// NewEngineServer checks cfg (one replica) and returns the server for
// sequences of up to maxContext tokens (prompt + output); call Run to start
// its engine loop.
func NewEngineServer(cfg Config, ex Executor, maxContext int) (*EngineServer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Replicas != 1 {
		return nil, fmt.Errorf("serving engine: one replica (parallel.dp = 1)")
	}
	if maxContext < 2 {
		return nil, fmt.Errorf("serving engine: a sequence must reach at least 2 tokens (got %d)", maxContext)
	}
	s := &EngineServer{cfg: cfg, ex: ex, maxContext: maxContext, submit: make(chan submission, 1024), inFlight: make(chan struct{}, MaxInFlight)}
	s.stats.FreeBlocks, s.stats.NumBlocks = cfg.Scheduler.NumBlocks, cfg.Scheduler.NumBlocks
	if sc, ok := ex.(slotCounter); ok {
		s.stats.FreeSlots, s.stats.Slots = sc.FreeSlots(), sc.Slots()
	}
	return s, nil
}

// MaxContext is the tokens one sequence may reach (prompt + output).
func (s *EngineServer) MaxContext() int { return s.maxContext }

// Stats is the engine loop's state after its last step.
func (s *EngineServer) Stats() EngineStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *EngineServer) publish(sched *Scheduler, iterations int64, aborted int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Waiting, s.stats.Running, s.stats.FreeBlocks = sched.Waiting(), sched.Running(), sched.FreeBlocks()
	s.stats.Iterations, s.stats.Aborted = iterations, aborted
	if sc, ok := s.ex.(slotCounter); ok {
		s.stats.FreeSlots = sc.FreeSlots()
	}
}

// Run is the engine loop: it takes new requests and drops those whose
// client went away at every iteration boundary, runs the scheduled
// iteration and sends each sequence its tokens as they are made, until ctx
// ends (then every request in it fails).
func (s *EngineServer) Run(ctx context.Context) error {
	sched, err := NewScheduler(s.cfg.Scheduler)
	if err != nil {
		return err
	}
	sched.Released = s.ex.Released
	tokens, _ := s.ex.(TokenSource)
	live := map[*Seq]submission{}
	var iterations int64
	aborted := 0
	fail := func(err error) {
		for _, sub := range live {
			sub.events <- tokenEvent{done: true, err: err}
		}
	}
	take := func(sub submission) {
		if err := sched.Add(sub.seq); err != nil {
			sub.events <- tokenEvent{done: true, err: &RefusedError{err.Error()}}
			return
		}
		live[sub.seq] = sub
	}
	for {
		if sched.Idle() {
			s.publish(sched, iterations, aborted)
			select {
			case <-ctx.Done():
				return nil
			case sub := <-s.submit:
				take(sub)
			}
		}
	drain:
		for {
			select {
			case sub := <-s.submit:
				take(sub)
			default:
				break drain
			}
		}
		for seq, sub := range live {
			select {
			case <-sub.gone:
				sched.Abort(seq)
				delete(live, seq)
				aborted++
			default:
			}
		}
		if ctx.Err() != nil {
			fail(ctx.Err())
			return nil
		}
		batch := sched.Schedule()
		if len(batch) == 0 {
			if sched.Idle() {
				continue
			}
			err := fmt.Errorf("serving engine: the scheduler holds %d waiting and %d running requests but schedules nothing", sched.Waiting(), sched.Running())
			fail(err)
			return err
		}
		if err := s.ex.Run(ctx, batch); err != nil {
			fail(err)
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		iterations++
		sched.Complete(func(seq *Seq, done bool) {
			sub := live[seq]
			tok := -1
			if tokens != nil {
				tok = tokens.Token(seq)
			}
			sub.events <- tokenEvent{token: tok, done: done}
			if done {
				delete(live, seq)
			}
		})
		s.publish(sched, iterations, aborted)
	}
}

// RefusedError is a request the engine cannot serve as asked (its sizes);
// OverloadedError one it has no room for now.
type RefusedError struct{ msg string }

func (e *RefusedError) Error() string { return e.msg }

// InvalidArgument marks the error for a transport's status code.
func (e *RefusedError) InvalidArgument() bool { return true }

type OverloadedError struct{ msg string }

func (e *OverloadedError) Error() string { return e.msg }

// ResourceExhausted marks the error for a transport's status code.
func (e *OverloadedError) ResourceExhausted() bool { return true }

// Check refuses a request the engine can never serve: a prompt or output
// outside [1, MaxPromptTokens] / [1, MaxOutputTokens], or a sequence longer
// than a slot (--engine-context).
func (s *EngineServer) Check(promptLen, maxTokens int) error {
	switch {
	case promptLen < 1 || promptLen > MaxPromptTokens:
		return &RefusedError{fmt.Sprintf("prompt: %d tokens, must be in [1, %d]", promptLen, MaxPromptTokens)}
	case maxTokens < 1 || maxTokens > MaxOutputTokens:
		return &RefusedError{fmt.Sprintf("max_tokens: must be in [1, %d] (got %d)", MaxOutputTokens, maxTokens)}
	case promptLen+maxTokens > s.maxContext:
		return &RefusedError{fmt.Sprintf("prompt + max_tokens: %d + %d tokens, the engine holds %d per sequence (--engine-context)", promptLen, maxTokens, s.maxContext)}
	}
	return nil
}

// Generate serves one request: promptLen prompt tokens and maxTokens
// output tokens (no end-of-sequence: it makes all of them). It calls emit
// with every token as the iteration that made it ends (done on the last)
// and returns when the last is emitted, the engine fails, emit fails or
// ctx ends; in the last two cases the engine drops the sequence and frees
// its KV blocks at its next iteration boundary.
func (s *EngineServer) Generate(ctx context.Context, promptLen, maxTokens int, emit func(token int, done bool) error) error {
	if err := s.Check(promptLen, maxTokens); err != nil {
		return err
	}
	select {
	case s.inFlight <- struct{}{}:
		defer func() { <-s.inFlight }()
	default:
		return &OverloadedError{fmt.Sprintf("overloaded: %d requests in flight", MaxInFlight)}
	}
	s.mu.Lock()
	id := s.nextID
	s.nextID++
	s.mu.Unlock()
	seq := &Seq{Req: Request{ID: id, InputLen: promptLen, OutputLen: maxTokens}}
	gone := make(chan struct{})
	defer close(gone)
	events := make(chan tokenEvent, maxTokens+1)
	select {
	case s.submit <- submission{seq: seq, events: events, gone: gone}:
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		var ev tokenEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return ctx.Err()
		}
		if ev.err != nil {
			return ev.err
		}
		if err := emit(ev.token, ev.done); err != nil {
			return err
		}
		if ev.done {
			return nil
		}
	}
}

type sseChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	FinishReason *string `json:"finish_reason"`
}

type sseChunk struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Model   string      `json:"model"`
	Choices []sseChoice `json:"choices"`
}

// ServeHTTP serves POST /v1/completions (streamed as server-sent events,
// one chunk per token, then "data: [DONE]") and GET /health.
func (s *EngineServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/health" && r.Method == http.MethodGet:
		w.WriteHeader(http.StatusOK)
		return
	case r.URL.Path != "/v1/completions":
		http.Error(w, "not found: the engine serves POST /v1/completions and GET /health", http.StatusNotFound)
		return
	case r.Method != http.MethodPost:
		http.Error(w, "method: POST /v1/completions", http.StatusMethodNotAllowed)
		return
	}
	var req completionRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes))
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "body: not a completions request: "+err.Error(), http.StatusBadRequest)
		return
	}
	in, err := promptTokens(req.Prompt)
	if err == nil {
		err = s.Check(in, req.MaxTokens)
	}
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case !req.Stream:
		http.Error(w, "stream: the engine streams (set \"stream\": true)", http.StatusBadRequest)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	started := false
	name := fmt.Sprintf("cmpl-%d", s.httpIDs.Add(1)-1)
	err = s.Generate(r.Context(), in, req.MaxTokens, func(_ int, done bool) error {
		if !started {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		c := sseChunk{ID: name, Object: "text_completion", Model: req.Model, Choices: []sseChoice{{Text: " t"}}}
		if done {
			stop := "length"
			c.Choices[0].FinishReason = &stop
		}
		b, _ := json.Marshal(c)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		if done {
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
		fl.Flush()
		return nil
	})
	var over *OverloadedError
	switch {
	case err == nil || r.Context().Err() != nil:
	case !started && errors.As(err, &over):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case !started:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fallthrough
	default:
		fmt.Fprintf(w, "data: {\"error\": %q}\n\n", err.Error())
		fl.Flush()
	}
}

// ErrStreamEnded is a stream that stopped before "data: [DONE]".
var ErrStreamEnded = errors.New("stream ended before [DONE]")

// LoadTarget is a server that speaks OpenAI's streaming completions.
type LoadTarget struct {
	BaseURL string // e.g. http://127.0.0.1:8000
	Model   string
	Client  *http.Client
	// RequestTimeout fails a request that has not finished in this time.
	RequestTimeout time.Duration
}

// Load sends reqs to the target at their arrival times (under
// maxConcurrency as benchmark_serving does), each as a streamed completion
// of InputLen prompt token ids and OutputLen tokens (max_tokens with
// ignore_eos), and times every streamed chunk at the client: the first is
// the first token, each later one an inter-token latency (a server that
// streams several tokens per chunk shows fewer, longer gaps, as in vLLM's
// benchmark). A request that errors, times out or ends before [DONE] is
// failed and counted, with the reason.
func Load(ctx context.Context, reqs []Request, t LoadTarget, maxConcurrency int) (*Result, error) {
	if !strings.HasPrefix(t.BaseURL, "http://") && !strings.HasPrefix(t.BaseURL, "https://") {
		return nil, fmt.Errorf("--server: want http://HOST:PORT or https://… (got %q)", t.BaseURL)
	}
	if t.Client == nil {
		t.Client = &http.Client{}
	}
	if t.RequestTimeout <= 0 {
		t.RequestTimeout = 10 * time.Minute
	}
	return loadWith(ctx, reqs, maxConcurrency, t.one)
}

// oneFunc sends one request and times its tokens at the client: the first
// token's time in rr.FirstTokenS, each later gap appended to gaps.
type oneFunc func(ctx context.Context, q Request, now func() float64, rr *RequestResult, gaps *[]float64) error

// loadWith sends reqs at their arrival times (under maxConcurrency) with
// one, and gathers the results.
func loadWith(ctx context.Context, reqs []Request, maxConcurrency int, one oneFunc) (*Result, error) {
	res := &Result{Requests: make([]RequestResult, len(reqs))}
	itl := make([][]float64, len(reqs))
	var sem chan struct{}
	if maxConcurrency > 0 {
		sem = make(chan struct{}, maxConcurrency)
	}
	start := time.Now()
	now := func() float64 { return time.Since(start).Seconds() }
	var wg sync.WaitGroup
	for i, q := range reqs {
		res.Requests[i] = RequestResult{ID: q.ID, InputLen: q.InputLen, OutputLen: q.OutputLen, ArrivalS: q.ArrivalS}
		if d := time.Duration((q.ArrivalS - now()) * float64(time.Second)); d > 0 {
			tm := time.NewTimer(d)
			select {
			case <-ctx.Done():
			case <-tm.C:
			}
			tm.Stop()
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
		}
		rr := &res.Requests[i]
		if err := ctx.Err(); err != nil {
			rr.Error = "not sent: " + err.Error()
			rr.SentS, rr.EndS = now(), now()
			continue
		}
		wg.Add(1)
		go func(q Request, rr *RequestResult, gaps *[]float64) {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			rr.SentS = now()
			err := one(ctx, q, now, rr, gaps)
			if err != nil {
				rr.Error = err.Error()
			}
			rr.EndS = now()
		}(q, rr, &itl[i])
	}
	wg.Wait()
	first, last := 0.0, 0.0
	for i, rr := range res.Requests {
		if i == 0 || rr.SentS < first {
			first = rr.SentS
		}
		last = max(last, rr.EndS)
		if rr.Error == "" {
			for _, g := range itl[i] {
				res.ITL.add(g, 1)
			}
			res.InSystemS += rr.EndS - rr.SentS
		}
	}
	res.DurationS = last - first
	return res, nil
}

// one streams one completion and records its token times.
func (t LoadTarget) one(ctx context.Context, q Request, now func() float64, rr *RequestResult, gaps *[]float64) error {
	ctx, cancel := context.WithTimeout(ctx, t.RequestTimeout)
	defer cancel()
	prompt := make([]int, q.InputLen)
	for i := range prompt {
		prompt[i] = 1 + (q.ID*31+i*7)%1000 // any ids: the work does not depend on them
	}
	body, _ := json.Marshal(map[string]any{"model": t.Model, "prompt": prompt, "max_tokens": q.OutputLen, "min_tokens": q.OutputLen,
		"stream": true, "ignore_eos": true, "temperature": 0})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(t.BaseURL, "/")+"/v1/completions", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	r := newLineReader(resp.Body)
	tokens, last := 0, 0.0
	for {
		line, err := r.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w after %d of %d tokens", ErrStreamEnded, tokens, q.OutputLen)
			}
			return fmt.Errorf("after %d of %d tokens: %w", tokens, q.OutputLen, err)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			if tokens == 0 {
				return fmt.Errorf("no token streamed before [DONE]")
			}
			return nil
		}
		if strings.Contains(data, "\"error\"") {
			return fmt.Errorf("server: %s", data)
		}
		t := now()
		if tokens == 0 {
			rr.FirstTokenS = t
		} else {
			*gaps = append(*gaps, t-last)
		}
		last = t
		tokens++
	}
}

// EngineBytes is what the engine's executor holds (0 when it does not
// say): a host reserves it from its memory budget.
func (s *EngineServer) EngineBytes() int64 {
	if a, ok := s.ex.(interface{ AllocatedBytes() int64 }); ok {
		return a.AllocatedBytes()
	}
	return 0
}
