package kernels

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// Every kernel file starts from the shared header, and Source hands NVRTC
// a text without include lines, with #line directives back to the files.
func TestSourceExpandsHeaders(t *testing.T) {
	if len(Files()) == 0 || len(Headers()) == 0 {
		t.Fatalf("files %v, headers %v", Files(), Headers())
	}
	for _, f := range Files() {
		raw, err := Raw(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(raw, `#include "pb_common.cuh"`) {
			t.Errorf("%s does not include pb_common.cuh", f)
		}
		src, err := Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(src, `#include "pb_`) {
			t.Errorf("%s: an include is left in the expanded source", f)
		}
		if !strings.HasPrefix(src, "#line 1 \""+f+"\"\n") || !strings.Contains(src, "#line 1 \"pb_common.cuh\"\n") {
			t.Errorf("%s: no #line directives for the file and the header", f)
		}
	}
	mod, err := Module(Files()...)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(mod, "#define PB_COMMON_CUH"); n != 1 {
		t.Errorf("the module holds pb_common.cuh %d times, want once", n)
	}
	for _, f := range Files() {
		if !strings.Contains(mod, "#line 1 \""+f+"\"\n") {
			t.Errorf("the module lacks %s", f)
		}
	}
}

// On a small file system with the line numbers derived by hand: the
// header replaces line 2, so line 3 of a.cu resumes as "#line 3".
func TestExpandLinesAndMissingHeader(t *testing.T) {
	fsys := fstest.MapFS{
		"a.cu":   {Data: []byte("// a\n#include \"h.cuh\"\nint a;\n#include <x.h>\n")},
		"h.cuh":  {Data: []byte("int h;\n")},
		"bad.cu": {Data: []byte("\n\n#include \"gone.cuh\"\n")},
	}
	var b strings.Builder
	read := func(n string) ([]byte, error) { return fs.ReadFile(fsys, n) }
	if err := expand(read, &b, "a.cu", map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	want := "#line 1 \"a.cu\"\n// a\n#line 1 \"h.cuh\"\nint h;\n#line 3 \"a.cu\"\nint a;\n#include <x.h>\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	err := expand(read, &b, "bad.cu", map[string]bool{})
	if err == nil || !strings.Contains(err.Error(), `bad.cu line 3 includes "gone.cuh"`) {
		t.Errorf("err = %v", err)
	}
}

// Expand treats a text that is not embedded like an embedded file.
func TestExpandOther(t *testing.T) {
	got, err := Expand("mine.cu", "#include \"pb_common.cuh\"\nint mine;\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "#line 1 \"mine.cu\"\n#line 1 \"pb_common.cuh\"\n") || !strings.HasSuffix(got, "#line 2 \"mine.cu\"\nint mine;\n") {
		t.Errorf("got %.200q … %q", got, got[len(got)-40:])
	}
	if _, err := Expand("x.cu", "#include \"nope.cuh\"\n"); err == nil {
		t.Error("an include of a missing header expanded")
	}
}

func TestModuleRefusesNonKernels(t *testing.T) {
	if _, err := Module(); err == nil {
		t.Error("an empty module was made")
	}
	if _, err := Module("pb_common.cuh"); err == nil || !strings.Contains(err.Error(), "not a kernel file") {
		t.Errorf("a header as a module: %v", err)
	}
	if _, err := Module("nope.cu"); err == nil {
		t.Error("a missing file made a module")
	}
}
