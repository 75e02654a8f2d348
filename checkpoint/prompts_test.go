package checkpoint

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestReadPromptIDs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := ReadPromptIDs(write("ok.json", "[[1, 2, 3], [4, 5, 6]]"))
	if want := [][]int{{1, 2, 3}, {4, 5, 6}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%v %v, want %v", got, err, want)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.json"), "read --ids-file: stat " + filepath.Join(dir, "missing.json")},
		// Refused before opening: an endless device and a pipe with no
		// writer (which open would wait on forever).
		{"/dev/zero", "read --ids-file /dev/zero: not a regular file (a character device)"},
		{fifo(t, dir), "read --ids-file " + filepath.Join(dir, "pipe") + ": not a regular file (a named pipe)"},
		// MaxIDsFileBytes+1 bytes of spaces: 16777217.
		{big(t, dir), "read --ids-file " + filepath.Join(dir, "big.json") + ": 16777217 bytes, more than the 16777216 bytes (16 MiB) a --ids-file may have"},
		{write("obj.json", `{"a": 1}`), "--ids-file " + filepath.Join(dir, "obj.json") + ": want a JSON list of token-id lists: "},
		{write("empty.json", "[]"), "--ids-file " + filepath.Join(dir, "empty.json") + " holds no prompts"},
	} {
		if _, err := ReadPromptIDs(c.path); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
}

func fifo(t *testing.T, dir string) string {
	p := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

// big is a sparse file one byte over MaxIDsFileBytes.
func big(t *testing.T, dir string) string {
	p := filepath.Join(dir, "big.json")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, MaxIDsFileBytes+1); err != nil {
		t.Fatal(err)
	}
	return p
}
