package fileio

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

func TestWriteAtomicRegularAndMissing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := WriteAtomic(p, writeString("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(p, writeString("two")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(got) != "two" || fi.Mode().Perm() != 0o600 {
		t.Errorf("got %q mode %v, want \"two\" mode 0600 (kept from the file replaced)", got, fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want 1 (no temporary file left)", len(ents))
	}
}

// A symlink to a regular file stays a symlink; the file it names is updated.
func TestWriteAtomicKeepsSymlink(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "real")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(sub, "results.json")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "results.json")
	if err := os.Symlink("real/results.json", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(link, writeString("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symlink (%v, %v)", link, fi.Mode(), err)
	}
	if got, _ := os.ReadFile(target); string(got) != "new" {
		t.Errorf("target holds %q, want \"new\"", got)
	}
	// A dangling symlink creates the file it names.
	dangling := filepath.Join(dir, "later")
	if err := os.Symlink("real/later.json", dangling); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(dangling, writeString("x")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(dangling); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("dangling symlink was replaced")
	}
	if got, _ := os.ReadFile(filepath.Join(sub, "later.json")); string(got) != "x" {
		t.Errorf("dangling symlink's target holds %q, want \"x\"", got)
	}
}

// A named pipe is written in place: the reader at the other end gets the
// bytes, and the pipe is still a pipe afterwards.
func TestWriteAtomicFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- "open: " + err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if err := WriteAtomic(fifo, writeString("through the pipe")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "through the pipe" {
			t.Errorf("reader got %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reader got nothing")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("%s is no longer a named pipe (%v, %v)", fifo, fi.Mode(), err)
	}
}

func TestWriteAtomicDevNull(t *testing.T) {
	before, err := os.Lstat("/dev/null")
	if err != nil {
		t.Skip("no /dev/null")
	}
	if err := WriteAtomic("/dev/null", writeString("discarded")); err != nil {
		t.Fatal(err)
	}
	after, err := os.Lstat("/dev/null")
	if err != nil || after.Mode()&os.ModeCharDevice == 0 || !os.SameFile(before, after) {
		t.Fatalf("/dev/null was replaced: %v %v", after.Mode(), err)
	}
}

func TestWriteAtomicDirectory(t *testing.T) {
	dir := t.TempDir()
	err := WriteAtomic(dir, writeString("x"))
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("err = %v, want one saying it is a directory", err)
	}
}

// A symlink whose chain goes through /proc (as /dev/stdout does) to a
// regular file is appended to in place, not replaced: the file stays the
// one the descriptor writes.
func TestWriteAtomicThroughProcFD(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "stdout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("before\n"); err != nil {
		t.Fatal(err)
	}
	before, _ := f.Stat()
	link := filepath.Join(dir, "out")
	if err := os.Symlink("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), link); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(link, writeString("after\n")); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(f.Name())
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("the file behind the descriptor was replaced (%v)", err)
	}
	if got, _ := os.ReadFile(f.Name()); string(got) != "before\nafter\n" {
		t.Errorf("file holds %q, want \"before\\nafter\\n\"", got)
	}
}

func TestReadSmall(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ids.json")
	if err := os.WriteFile(ok, []byte("[[1,2]]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadSmall(ok, "--ids-file", 16); err != nil || string(b) != "[[1,2]]" {
		t.Fatalf("ReadSmall = %q, %v", b, err)
	}
	// 7 bytes against a 6-byte limit.
	if _, err := ReadSmall(ok, "--ids-file", 6); err == nil || !strings.Contains(err.Error(), "7 bytes, more than the 6 bytes a --ids-file may have") {
		t.Errorf("err = %v", err)
	}
	if _, err := ReadSmall(filepath.Join(dir, "none"), "--ids-file", 16); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct{ path, kind string }{
		{"/dev/zero", "a character device"},
		{fifo, "a named pipe"},
		{dir, "a directory"},
	} {
		if _, err := os.Stat(c.path); err != nil {
			continue
		}
		done := make(chan error, 1)
		go func() { _, err := ReadSmall(c.path, "--ids-file", 1<<20); done <- err }()
		select {
		case err := <-done:
			want := "read --ids-file " + c.path + ": not a regular file (" + c.kind + ")"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err = %v, want %q", c.path, err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: ReadSmall blocked", c.path)
		}
	}
}

func TestReadBoundedStream(t *testing.T) {
	// An endless stream stops at limit+1 bytes.
	_, err := ReadBounded(zeros{}, "standard input", "config", 1<<20)
	if err == nil || !strings.Contains(err.Error(), "more than the 1048576 bytes (1 MiB) a config may have") {
		t.Fatalf("err = %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	// A missing folder is named, with the user's path, not a temporary file.
	err := CheckWritable(filepath.Join(dir, "no", "t.json"))
	if err == nil || !strings.Contains(err.Error(), "cannot create "+filepath.Join(dir, "no", "t.json")+": folder "+filepath.Join(dir, "no")+" does not exist") || strings.Contains(err.Error(), ".tmp") || strings.Contains(err.Error(), ".probe") {
		t.Errorf("missing folder: %v", err)
	}
	if err := CheckWritable(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	// A writable folder passes and is left as it was; so does /dev/null.
	ok := filepath.Join(dir, "out.json")
	if err := CheckWritable(ok); err != nil {
		t.Errorf("writable: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe left %d files behind", len(entries))
	}
	if err := CheckWritable("/dev/null"); err != nil {
		t.Errorf("/dev/null: %v", err)
	}
	// WriteAtomic's own error names the user's path too.
	err = WriteAtomic(filepath.Join(dir, "no", "t.json"), func(io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "folder "+filepath.Join(dir, "no")+" does not exist") {
		t.Errorf("WriteAtomic into a missing folder: %v", err)
	}
}
