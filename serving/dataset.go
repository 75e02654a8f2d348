package serving

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// MaxFileBytes bounds a dataset or trace file: it is read whole (a dataset)
// or line by line (a trace), never past this.
const MaxFileBytes = 1 << 30

// MaxTraceLineBytes bounds one line of a trace.
const MaxTraceLineBytes = 1 << 16

// CharsPerToken turns a ShareGPT turn's text into a token count without a
// tokenizer: ⌈UTF-8 bytes / 4⌉, the usual rule of thumb for English text
// under BPE tokenizers (OpenAI's tokenizer guide: "one token ≈ 4 characters").
const CharsPerToken = 4

func approxTokens(s string) int { return (len(s) + CharsPerToken - 1) / CharsPerToken }

type shareGPTEntry struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// ReadShareGPT reads a ShareGPT-format JSON file (an array of
// {"conversations": [{"from", "value"}, …]}) as vLLM's benchmark does: the
// first turn is the prompt, the second the completion; entries with fewer
// than two turns are skipped, and so are pairs with a prompt or completion
// under 4 tokens, a prompt over 1,024 or a total over 2,048 (vLLM's
// filter). outputLen > 0 replaces every completion's length
// (--sharegpt-output-len). Token counts are approxTokens of the text.
func ReadShareGPT(path string, outputLen int) ([]LenPair, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--dataset-path: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--dataset-path %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("--dataset-path %s: larger than %d bytes", path, MaxFileBytes)
	}
	var entries []shareGPTEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
			return nil, fmt.Errorf("--dataset-path %s:%d: not ShareGPT JSON: %v", path, line, err)
		}
		return nil, fmt.Errorf("--dataset-path %s: not ShareGPT JSON (an array of {\"conversations\": [{\"from\", \"value\"}, …]}): %v", path, err)
	}
	var out []LenPair
	for _, e := range entries {
		if len(e.Conversations) < 2 {
			continue
		}
		in := approxTokens(e.Conversations[0].Value)
		o := approxTokens(e.Conversations[1].Value)
		if outputLen > 0 {
			o = outputLen
		}
		if in < 4 || o < 4 || in > 1024 || in+o > 2048 {
			continue
		}
		out = append(out, LenPair{InputLen: in, OutputLen: o})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--dataset-path %s: no conversation with two turns passes the length filter (prompt and completion ≥ 4 tokens, prompt ≤ 1024, total ≤ 2048)", path)
	}
	return out, nil
}

type traceLine struct {
	ArrivalS  *float64 `json:"arrival_s"`
	InputLen  *int     `json:"input_len"`
	OutputLen *int     `json:"output_len"`
}

// ReadTrace reads a request trace: JSON Lines of {"arrival_s", "input_len",
// "output_len"}, arrivals in seconds, non-decreasing; blank lines are
// skipped. Errors name the file and line.
func ReadTrace(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	defer f.Close()
	return parseTrace(io.LimitReader(f, MaxFileBytes), path)
}

func parseTrace(r io.Reader, path string) ([]Request, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxTraceLineBytes)
	var out []Request
	line := 0
	last := 0.0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("--trace %s:%d", path, line)
		var tl traceLine
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&tl); err != nil {
			return nil, fmt.Errorf("%s: want {\"arrival_s\": S, \"input_len\": N, \"output_len\": N}: %v", where, err)
		}
		switch {
		case tl.ArrivalS == nil || tl.InputLen == nil || tl.OutputLen == nil:
			return nil, fmt.Errorf("%s: arrival_s, input_len and output_len are all required", where)
		case !(*tl.ArrivalS >= 0) || math.IsInf(*tl.ArrivalS, 0):
			return nil, fmt.Errorf("%s: arrival_s must be a finite number ≥ 0 (got %g)", where, *tl.ArrivalS)
		case *tl.ArrivalS < last:
			return nil, fmt.Errorf("%s: arrival_s %g is before the previous line's %g: arrivals must not decrease", where, *tl.ArrivalS, last)
		case *tl.InputLen < 1:
			return nil, fmt.Errorf("%s: input_len must be ≥ 1 (got %d)", where, *tl.InputLen)
		case *tl.OutputLen < 1:
			return nil, fmt.Errorf("%s: output_len must be ≥ 1 (got %d)", where, *tl.OutputLen)
		}
		if len(out) >= MaxNumPrompts {
			return nil, fmt.Errorf("%s: more than %d requests", where, MaxNumPrompts)
		}
		last = *tl.ArrivalS
		out = append(out, Request{ID: len(out), ArrivalS: last, InputLen: *tl.InputLen, OutputLen: *tl.OutputLen})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("--trace %s:%d: line longer than %d bytes", path, line+1, MaxTraceLineBytes)
		}
		return nil, fmt.Errorf("--trace %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--trace %s: no requests", path)
	}
	return out, nil
}
