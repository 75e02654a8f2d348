package main

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 24 item 11: a non-finite float flag is refused at parse time,
// naming the flag, before any work.
func TestNonFiniteFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"search", "--config", "test/tp2pp2-tiny", "--max-tpot-ms", "nan"}, `--max-tpot-ms: must be a finite number (got "nan")`},
		{[]string{"search", "--config", "test/tp2pp2-tiny", "--max-ttft-s", "-inf"}, `--max-ttft-s: must be a finite number (got "-inf")`},
		{[]string{"plot", "--tolerance", "nan", "x.json"}, `--tolerance: must be a finite number (got "nan")`},
		{[]string{"run", "--tolerance", "inf"}, `--tolerance: must be a finite number (got "inf")`},
		{[]string{"model", "--dry-run", "--remote-overhead", "NaN"}, `--remote-overhead: must be a finite number (got "NaN")`},
		// Issue 24 item 12: launcher flags that were accepted unchecked.
		{[]string{"run", "--config", "test/tp2pp2-tiny", "--nproc", "4", "--join-timeout", "-5s"}, "--join-timeout: must be in (0s, 24h0m0s] (got -5s)"},
		{[]string{"run", "--config", "test/tp2pp2-tiny", "--nproc", "4", "--master-addr", "bad host"}, `--master-addr "bad host": not a host name or IP address`},
		{[]string{"run", "--config", "test/tp2pp2-tiny", "--nproc", "4", "--rdzv-id", "a b"}, `--rdzv-id "a b": no spaces or control characters`},
		{[]string{"run", "--config", "test/tp2pp2-tiny", "--nproc", "4", "--warmup", "-5"}, "--warmup: must be ≥ 0 (got -5"},
		{[]string{"generate", "--model-dir", "x", "--ids-file", "y", "--join-timeout", "0s"}, "--join-timeout: must be in (0s, 24h0m0s] (got 0s)"},
		// A finite flag whose derived time is not: 1e-300 B/s.
		{[]string{"model", "--dry-run", "--config", "test/single-tiny", "--remote-link", "bytes_per_s=1e-300,latency_s=0"},
			"bytes_per_s: must be a positive finite number in [1000, 1e+15] B/s (got 1e-300)"},
	} {
		start := time.Now()
		_, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%v: refused after %v", c.args, d)
		}
	}
}

// Issue 24 item 5: --output and --trace write through a symlink (which
// stays a symlink), into a named pipe (read at the other end) and into
// /dev/null, never replacing any of them by a regular file.
func TestOutputsKeepSymlinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.json")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--output", "--trace"} {
		if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--format", "json", flag, link); err != nil {
			t.Fatalf("%s: %v", flag, err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s: %s is no longer a symlink (%v)", flag, link, err)
		}
		if b, _ := os.ReadFile(target); !strings.HasPrefix(string(b), "{") {
			t.Errorf("%s: the symlink's target holds %.40q, want the JSON document", flag, b)
		}
	}
	if _, err := runCLI(t, "search", "--config", "test/tp2pp2-tiny", "--format", "json", "--output", link); err != nil {
		t.Fatalf("search --output: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("search --output: %s is no longer a symlink (%v)", link, err)
	}

	before, err := os.Lstat("/dev/null")
	if err == nil {
		if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--output", "/dev/null"); err != nil {
			t.Fatalf("--output /dev/null: %v", err)
		}
		after, err := os.Lstat("/dev/null")
		if err != nil || after.Mode()&os.ModeCharDevice == 0 || !os.SameFile(before, after) {
			t.Fatalf("--output /dev/null replaced /dev/null (%v, %v)", after.Mode(), err)
		}
	}

	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--format", "json", "--output", fifo); err != nil {
		t.Fatalf("--output FIFO: %v", err)
	}
	select {
	case s := <-got:
		if !strings.Contains(s, `"schema"`) {
			t.Errorf("the pipe's reader got %.80q, want the JSON document", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pipe's reader got nothing")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("%s is no longer a named pipe", fifo)
	}
}

// Issue 24 item 11: NaN weights make generate fail, naming the sequence and
// position, instead of printing token ids -1 with exit 0 (or, with
// --logits-out, a bare "json: unsupported value: NaN").
func TestGenerateRefusesNonFiniteLogits(t *testing.T) {
	src := filepath.Join("..", "..", "checkpoint", "testdata", "llama-tiny")
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "model.safetensors" {
			b = withNaN(t, b, "model.layers.1.input_layernorm.weight")
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ids := filepath.Join(dir, "ids.json")
	if err := os.WriteFile(ids, []byte("[[1, 2, 3]]"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--logits-out", filepath.Join(dir, "logits.json")}} {
		args := append([]string{"generate", "--model-dir", dir, "--ids-file", ids, "--new-tokens", "2"}, extra...)
		out, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "the logits of sequence 0 at position") || !strings.Contains(err.Error(), "are not finite") {
			t.Errorf("%v: err = %v, want the non-finite logits named; output %q", extra, err, out)
		}
		if strings.Contains(out, "-1") {
			t.Errorf("%v: printed %q", extra, out)
		}
	}
}

// withNaN returns a copy of a safetensors file with the first float32 of
// tensor set to NaN.
func withNaN(t *testing.T, b []byte, tensor string) []byte {
	t.Helper()
	n := binary.LittleEndian.Uint64(b)
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	var info struct {
		DType   string  `json:"dtype"`
		Offsets []int64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(header[tensor], &info); err != nil || info.DType != "F32" {
		t.Fatalf("%s: %s %v", tensor, info.DType, err)
	}
	out := slices.Clone(b)
	binary.LittleEndian.PutUint32(out[8+int64(n)+info.Offsets[0]:], math.Float32bits(float32(math.NaN())))
	return out
}
