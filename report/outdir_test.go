package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckOutDir(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(tmp, "new", "sub"), ""}, // created
		{file, "--output-dir " + file + ": exists and is not a directory"},
		{filepath.Join(file, "sub"), "--output-dir " + filepath.Join(file, "sub") + ": cannot create the directory"},
	} {
		err := CheckOutDir(tc.dir)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.dir, err, tc.want)
		}
	}
	// the probe leaves nothing behind
	if ents, _ := os.ReadDir(filepath.Join(tmp, "new", "sub")); len(ents) != 0 {
		t.Errorf("probe left %v", ents)
	}
	if os.Geteuid() != 0 { // root writes through permissions
		ro := filepath.Join(tmp, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := CheckOutDir(ro); err == nil || !strings.Contains(err.Error(), "cannot create a file there") {
			t.Errorf("read-only dir: %v", err)
		}
	}
}

// When --out fails at the end, the results still reach stdout and the error
// says which files are missing and where the results went.
func TestWriteOutFilesFallsBackToStdout(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files := []OutFile{
		{"results.json", func(w io.Writer) error { _, err := io.WriteString(w, "{}"); return err }},
		{"results.csv", func(w io.Writer) error { _, err := io.WriteString(w, "a,b"); return err }},
	}
	fallback := func(w io.Writer) error { _, err := io.WriteString(w, `{"results":1}`); return err }
	var out bytes.Buffer
	err := WriteOutFiles(file, files, &out, fallback)
	if err == nil || !strings.Contains(err.Error(), "cannot write [results.json results.csv]") ||
		!strings.Contains(err.Error(), "printed to standard output as JSON") || out.String() != `{"results":1}` {
		t.Fatalf("err %v, stdout %q", err, out.String())
	}
	// a writable directory: both files, nothing on stdout
	out.Reset()
	dir := filepath.Join(tmp, "ok")
	if err := WriteOutFiles(dir, files, &out, fallback); err != nil || out.Len() != 0 {
		t.Fatalf("err %v stdout %q", err, out.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "results.csv")); string(b) != "a,b" {
		t.Fatalf("results.csv %q", b)
	}
}
