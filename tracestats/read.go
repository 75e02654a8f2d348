package tracestats

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// MaxTraceBytes bounds a trace file read from disk (4 GiB): far above any
// trace partbench writes, far below what would exhaust a workstation when
// streamed (only one event is held at a time).
const MaxTraceBytes = 4 << 30

// MaxEvents bounds the complete events one trace may hold (each costs a
// few dozen bytes once read).
const MaxEvents = 50_000_000

// Event is one timed slice of a trace: a complete ("X") event, or a
// begin/end ("B"/"E") pair on one thread.
type Event struct {
	Process string // the process_name metadata of its pid, or "pid N"
	Rank    int    // the thread id (partbench writes one thread per rank)
	Name    string
	Cat     string
	Phase   string // args.phase where present (prefill, decode, …)
	DurS    float64
}

// Trace is what Read returns: the events and the order in which processes
// first appeared.
type Trace struct {
	Events    []Event
	Processes []string
}

type rawEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   float64         `json:"ts"`
	Dur  *float64        `json:"dur"`
	Pid  json.RawMessage `json:"pid"`
	Tid  json.RawMessage `json:"tid"`
	Args map[string]any  `json:"args"`
}

// ReadFile reads the trace at path ("-" for r), refusing anything but a
// regular file or a pipe/terminal given as "-", and files over
// MaxTraceBytes. Errors name the file.
func ReadFile(path string, stdin io.Reader) (*Trace, error) {
	if path == "-" {
		t, err := Read(io.LimitReader(stdin, MaxTraceBytes+1))
		if err != nil {
			return nil, fmt.Errorf("trace from standard input: %w", err)
		}
		return t, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("trace %s: not a regular file (%s); give a trace file, or - for standard input", path, fi.Mode().Type())
	}
	if fi.Size() > MaxTraceBytes {
		return nil, fmt.Errorf("trace %s: %d bytes, more than the %d bytes (4 GiB) a trace may have", path, fi.Size(), int64(MaxTraceBytes))
	}
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	return t, nil
}

// Read streams trace-event JSON from r: either an object whose
// "traceEvents" member is the event array (other members are skipped) or a
// bare event array, the two forms chrome://tracing and Perfetto accept.
// Complete events ("X") and begin/end pairs ("B"/"E", matched per thread)
// become Events; metadata names processes; everything else is ignored.
func Read(r io.Reader) (*Trace, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not trace-event JSON: %w", err)
	}
	b := newBuilder()
	switch tok {
	case json.Delim('['):
		if err := b.readArray(dec); err != nil {
			return nil, err
		}
	case json.Delim('{'):
		found := false
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("not trace-event JSON: %w", err)
			}
			if kt == "traceEvents" {
				open, err := dec.Token()
				if err != nil || open != json.Delim('[') {
					return nil, errors.New(`"traceEvents" is not an array`)
				}
				if err := b.readArray(dec); err != nil {
					return nil, err
				}
				found = true
				continue
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("not trace-event JSON: %w", err)
			}
		}
		if !found {
			return nil, errors.New(`no "traceEvents" array: not a Chrome/Perfetto trace`)
		}
	default:
		return nil, errors.New("not trace-event JSON: want an object with traceEvents or an array of events")
	}
	return b.trace(), nil
}

type threadKey struct{ pid, tid string }

type builder struct {
	names  map[string]string // pid → process name
	order  []string          // pids in first-seen order
	seen   map[string]bool
	open   map[threadKey][]rawEvent // B events awaiting their E
	events []pending
}

type pending struct {
	pid string
	ev  Event
}

func newBuilder() *builder {
	return &builder{names: map[string]string{}, seen: map[string]bool{}, open: map[threadKey][]rawEvent{}}
}

// readArray reads array elements until the closing bracket.
func (b *builder) readArray(dec *json.Decoder) error {
	for i := 0; dec.More(); i++ {
		var e rawEvent
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		if err := b.add(i, e); err != nil {
			return err
		}
		if len(b.events) > MaxEvents {
			return fmt.Errorf("more than %d timed events: summarise a smaller window", MaxEvents)
		}
	}
	_, err := dec.Token() // ']'
	return err
}

func (b *builder) add(i int, e rawEvent) error {
	pid, tid := string(e.Pid), string(e.Tid)
	if !b.seen[pid] && e.Ph != "" {
		b.seen[pid] = true
		b.order = append(b.order, pid)
	}
	switch e.Ph {
	case "M":
		if e.Name == "process_name" {
			if n, ok := e.Args["name"].(string); ok {
				b.names[pid] = n
			}
		}
	case "X":
		if e.Dur == nil {
			return fmt.Errorf("event %d (%q): complete event without \"dur\"", i, e.Name)
		}
		return b.timed(i, pid, tid, e, *e.Dur)
	case "B":
		k := threadKey{pid, tid}
		b.open[k] = append(b.open[k], e)
	case "E":
		k := threadKey{pid, tid}
		st := b.open[k]
		if len(st) == 0 {
			return nil // an end whose begin lies before the window
		}
		begin := st[len(st)-1]
		b.open[k] = st[:len(st)-1]
		for k, v := range e.Args { // args of the end event join the begin's
			if begin.Args == nil {
				begin.Args = map[string]any{}
			}
			begin.Args[k] = v
		}
		return b.timed(i, pid, tid, begin, e.Ts-begin.Ts)
	}
	return nil
}

func (b *builder) timed(i int, pid, tid string, e rawEvent, durUs float64) error {
	if math.IsNaN(durUs) || math.IsInf(durUs, 0) || durUs < 0 {
		return fmt.Errorf("event %d (%q): duration %v µs is not a finite non-negative number", i, e.Name, durUs)
	}
	rank := -1
	var n json.Number
	if err := json.Unmarshal([]byte(tid), &n); err == nil {
		if v, err := n.Int64(); err == nil && v >= math.MinInt32 && v <= math.MaxInt32 {
			rank = int(v)
		}
	}
	phase, _ := e.Args["phase"].(string)
	b.events = append(b.events, pending{pid, Event{Rank: rank, Name: e.Name, Cat: e.Cat, Phase: phase, DurS: durUs * 1e-6}})
	return nil
}

func (b *builder) trace() *Trace {
	name := func(pid string) string {
		if n, ok := b.names[pid]; ok {
			return n
		}
		return "pid " + pid
	}
	t := &Trace{Events: make([]Event, len(b.events))}
	for i, p := range b.events {
		p.ev.Process = name(p.pid)
		t.Events[i] = p.ev
	}
	seen := map[string]bool{}
	for _, pid := range b.order {
		n := name(pid)
		if !seen[n] {
			seen[n] = true
			t.Processes = append(t.Processes, n)
		}
	}
	return t
}
