package serving

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The engine behind its HTTP endpoint, measured at the client: 20 tiny
// requests at 400 req/s, all streamed to [DONE] with one chunk per token
// (so as many inter-token gaps as tokens after the first), over port 0.
func TestLoadAgainstEngineServer(t *testing.T) {
	_, ex := tinyEngine(t, 4, 24)
	cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 1, NumBlocks: 4 * 24},
		Replicas: 1, Router: RouterRoundRobin}
	srv, err := NewEngineServer(cfg, ex, 24)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	reqs := mustGenerate(t, Spec{NumPrompts: 20, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: 400},
		Lengths: Lengths{InputLen: 10, OutputLen: 4, RangeRatio: 0.5}, Seed: 2})
	res, err := Load(ctx, reqs, LoadTarget{BaseURL: hs.URL, Model: "single-tiny"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := checkRun(t, res)
	gaps, want := 0.0, 0
	for _, w := range res.ITL.Weight {
		gaps += w
	}
	for _, r := range reqs {
		want += r.OutputLen - 1
	}
	if m.Completed != 20 || int(gaps) != want {
		for _, r := range res.Requests {
			if r.Error != "" {
				t.Log(r.Error)
			}
		}
		t.Errorf("%d completed, %g gaps (want %d)", m.Completed, gaps, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// Requests a server refuses, cuts short or never answers in time are
// failed, counted and explained, never dropped.
func TestLoadCountsFailures(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		_ = jsonDecode(r, &body)
		switch body.MaxTokens {
		case 1:
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\": [{\"text\": \"a\"}]}\n\n") // no [DONE]
		case 3:
			select { // past the client's timeout
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
			}
		default:
			fmt.Fprint(w, "data: {\"choices\": [{\"text\": \"a\"}]}\n\ndata: [DONE]\n\n")
		}
	}))
	defer hs.Close()
	reqs := []Request{{ID: 0, InputLen: 3, OutputLen: 1}, {ID: 1, InputLen: 3, OutputLen: 2}, {ID: 2, InputLen: 3, OutputLen: 3}, {ID: 3, InputLen: 3, OutputLen: 4}}
	res, err := Load(context.Background(), reqs, LoadTarget{BaseURL: hs.URL, RequestTimeout: time.Second}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"HTTP 503", "stream ended before [DONE]", "deadline exceeded", ""} {
		got := res.Requests[i].Error
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("request %d: error %q, want %q", i, got, want)
		}
	}
	if m := Summarize(res, []float64{99}, Goodput{}); m.Completed != 1 || m.Failed != 3 {
		t.Errorf("%d completed, %d failed", m.Completed, m.Failed)
	}
	if _, err := Load(context.Background(), reqs, LoadTarget{BaseURL: "127.0.0.1:1"}, 0); err == nil || !strings.Contains(err.Error(), "--server") {
		t.Errorf("URL without scheme: %v", err)
	}
}

func jsonDecode(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }

// The server refuses what it cannot serve with 400 and the reason: a
// sequence longer than its slots, a request that does not stream.
func TestEngineServerRefuses(t *testing.T) {
	_, ex := tinyEngine(t, 2, 24)
	cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 2, MaxNumBatchedTokens: 8, BlockSize: 1, NumBlocks: 48},
		Replicas: 1, Router: RouterRoundRobin}
	srv, err := NewEngineServer(cfg, ex, 24)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	for _, tc := range []struct{ body, want string }{
		{`{"prompt": [1,2,3], "max_tokens": 30, "stream": true}`, "--engine-context"},
		{`{"prompt": [1,2,3], "max_tokens": 3}`, "stream"},
		{`{"prompt": {}, "max_tokens": 3, "stream": true}`, "prompt"},
		{`not json`, "body"},
	} {
		resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: HTTP %d %q, want 400 naming %q", tc.body, resp.StatusCode, b, tc.want)
		}
	}
}
