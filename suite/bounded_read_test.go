package suite

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 24 item 10: a spec or a run log that is a named pipe or a device is
// refused at once, naming it, instead of blocking on open or reading
// without end.
func TestSpecAndRunLogReadsAreBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	logDir := filepath.Join(dir, "out")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(logDir, RunsFile)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"spec FIFO", func() error { _, err := Load(fifo); return err }, "read spec " + fifo + ": not a regular file (a named pipe)"},
		{"spec device", func() error { _, err := Load("/dev/zero"); return err }, "read spec /dev/zero: not a regular file (a character device)"},
		{"run log device", func() error { _, _, err := ReadLog(filepath.Join(logDir, RunsFile)); return err },
			"read run log " + filepath.Join(logDir, RunsFile) + ": not a regular file (a character device)"},
	} {
		done := make(chan error, 1)
		go func() { done <- c.call() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still reading after 30 s", c.name)
		}
	}
}
