package suite

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/partbench/partbench/fileio"
)

// RunsFile is the run log's name in the output directory.
const RunsFile = "runs.jsonl"

// SpecFile is the copy of the spec the suite ran, beside the log, so a
// report can be regenerated from the directory alone.
const SpecFile = "spec.json"

// Record is one run as the log holds it: one JSON line, appended and
// fsynced as the run finishes. Times are seconds, bytes integers.
type Record struct {
	// Schema is RecordSchema on every line partbench writes (empty on logs
	// written before it was recorded, which are read as the same layout).
	Schema   string `json:"schema,omitempty"`
	Spec     string `json:"spec"`
	SpecHash string `json:"spec_hash"`
	Cell     string `json:"cell"`
	Baseline string `json:"baseline"`
	Workload string `json:"workload"`
	Kind     string `json:"kind"`
	Mode     string `json:"mode"`
	// Run is the measured run's index in its cell (0..runs−1); warm-up runs
	// are logged with Warmup set and Run counting warm-ups.
	Run    int  `json:"run"`
	Warmup bool `json:"warmup"`
	// LatencyS is the cell's headline: s per decode step (llm-decode), the
	// prefill request (llm-prefill, encoder, microbench) or the whole
	// generation (smoke). NetBytes and ModelBytes are the same unit's
	// payload, measured in the transport and from the model (partition).
	LatencyS   float64 `json:"latency_s"`
	NetBytes   float64 `json:"net_bytes"`
	ModelBytes float64 `json:"model_bytes"`
	WireBytes  float64 `json:"wire_bytes"`
	// Phases as measured, seconds: kv mode's weight upload, the prefill,
	// all decode steps together.
	LoadS       float64 `json:"load_s"`
	PrefillS    float64 `json:"prefill_s"`
	DecodeS     float64 `json:"decode_s"`
	DecodeSteps int     `json:"decode_steps"`
	TotalBytes  int64   `json:"total_net_bytes"`
	// Util is device (or CPU) busy fraction over the server's span.
	Util       float64 `json:"util"`
	UtilSource string  `json:"util_source"`
	// ModeledS is sim's estimate of LatencyS on Spec.Hardware over Spec.Link.
	ModeledS float64 `json:"modeled_latency_s"`
	// Mismatches are payloads whose bytes differ from the model's.
	Mismatches []string `json:"mismatches,omitempty"`
	Backend    string   `json:"backend"`
	Transport  string   `json:"transport,omitempty"`
	Time       string   `json:"time"`
}

// Log is the append-only run log.
type Log struct {
	f *os.File
}

// OpenLog opens dir/runs.jsonl for appending. A torn last line (a run
// killed while writing) is cut off first; the records before it are
// returned. fresh refuses a log that already holds records.
func OpenLog(dir string, fresh bool) (*Log, []Record, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("--output-dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, RunsFile)
	recs, good, err := ReadLog(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if fresh && len(recs) > 0 {
		return nil, nil, fmt.Errorf("%s holds %d runs: pass --resume to continue that suite, or choose another --output-dir", path, len(recs))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &Log{f: f}, recs, nil
}

// RecordSchema names the layout of one runs.jsonl line.
const RecordSchema = "partbench.suite-run/v1"

// Append writes one record as one line and fsyncs it.
func (l *Log) Append(r Record) error {
	r.Schema = RecordSchema
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", l.f.Name(), err)
	}
	return l.f.Sync()
}

// Close closes the log.
func (l *Log) Close() error { return l.f.Close() }

// MaxRunLogBytes bounds runs.jsonl: a record is under 2 KiB, so this is
// over 100,000 runs, more than a suite spec (at most MaxSpecBytes of cells
// × trials) asks for in practice.
const MaxRunLogBytes = 256 << 20

// ReadLog reads every complete record of a run log and the byte offset
// after the last one. A last line without its newline is a run killed
// while writing and is ignored; a malformed complete line is an error
// naming the line.
func ReadLog(path string) ([]Record, int64, error) {
	data, err := fileio.ReadSmall(path, "run log", MaxRunLogBytes)
	if err != nil {
		return nil, 0, err
	}
	var out []Record
	var off int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		n := int64(len(sc.Bytes())) + 1
		if off+n > int64(len(data)) { // no newline: torn
			break
		}
		var r Record
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, 0, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if r.Schema != "" && r.Schema != RecordSchema {
			return nil, 0, fmt.Errorf("%s:%d: schema %q: this partbench reads %s", path, line, r.Schema, RecordSchema)
		}
		out = append(out, r)
		off += n
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return out, off, nil
}

// Measured keeps the measured records, one per (cell, run): a duplicate
// is an error naming it (the runner never writes one).
func Measured(recs []Record) ([]Record, error) {
	seen := map[string]bool{}
	var out []Record
	for _, r := range recs {
		if r.Warmup {
			continue
		}
		k := fmt.Sprintf("%s#%d", r.Cell, r.Run)
		if seen[k] {
			return nil, fmt.Errorf("run log: cell %s run %d appears twice", r.Cell, r.Run)
		}
		seen[k] = true
		out = append(out, r)
	}
	return out, nil
}
