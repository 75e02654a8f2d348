package configs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The three inputs of issue 12 item 1 made toml.ParseError.ErrorWithPosition
// index out of range; each must be a syntax error naming file, line, column
// and the offending line.
func TestSyntaxErrorNeverPanics(t *testing.T) {
	for _, tc := range []struct {
		in       string
		line     string // the echoed line
		position string // source:line:column
	}{
		{"\"\\", `"\`, "bad.toml:1:"},
		{"name = \"\\", `name = "\`, "bad.toml:1:"},
		{"x=\"\"\"\\", `x="""\`, "bad.toml:1:"},
		// A valid first line, then the error on line 2: the line number counts.
		{"version = 1\nname = \"\\", `name = "\`, "bad.toml:2:"},
	} {
		_, err := Parse(strings.NewReader(tc.in), "bad.toml")
		if err == nil {
			t.Errorf("%q: no error", tc.in)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tc.position) || !strings.Contains(msg, "syntax error") ||
			!strings.Contains(msg, "| "+tc.line+"\n") || !strings.HasSuffix(msg, "^") {
			t.Errorf("%q: error does not give position %q and the line %q:\n%s", tc.in, tc.position, tc.line, msg)
		}
	}
}

func TestSyntaxErrorColumn(t *testing.T) {
	// "name = = 1": the second "=" is byte 7, column 8 (n=1 … space=7, "="=8).
	_, err := Parse(strings.NewReader("name = = 1\n"), "f.toml")
	if err == nil || !strings.HasPrefix(err.Error(), "f.toml:1:8: ") {
		t.Fatalf("want f.toml:1:8, got %v", err)
	}
	lines := strings.Split(err.Error(), "\n")
	// The caret sits under column 8 of the echoed line.
	if got, want := strings.Index(lines[2], "^")-strings.Index(lines[2], "| ")-2, 7; got != want {
		t.Errorf("caret at offset %d, want %d:\n%s", got, want, err)
	}
}

func TestLoadRefusesNonRegularAndLargeFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file (a directory)") {
		t.Errorf("directory: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file (a character device)") {
			t.Errorf("/dev/zero: %v", err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		// Opening a FIFO with no writer would block: Load must refuse it first.
		if _, err := Load(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
			t.Errorf("fifo: %v", err)
		}
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxConfigBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "more than the 1048576 bytes") {
		t.Errorf("big file: %v", err)
	}
	if _, err := LoadCalibration(big); err == nil || !strings.Contains(err.Error(), "read calibration") {
		t.Errorf("big calibration: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v does not match fs.ErrNotExist", err)
	}
}

func TestParseIsBounded(t *testing.T) {
	// An endless reader (like /dev/zero through a pipe) ends after 1 MiB + 1.
	_, err := Parse(endless{}, "standard input")
	if err == nil || !strings.Contains(err.Error(), "standard input: more than the 1048576 bytes") {
		t.Fatalf("endless input: %v", err)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '#'
	}
	return len(p), nil
}

func TestLoadStandardInput(t *testing.T) {
	data, err := fs.ReadFile(Files, "test/tp4-tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	cfg, err := Load("-")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Load("test/tp4-tiny")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source != "standard input" || cfg.Parallel.TP != want.Parallel.TP || cfg.Model != want.Model {
		t.Errorf("config from standard input %+v differs from the preset's %+v", cfg, want)
	}
}
