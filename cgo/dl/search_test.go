//go:build cgo

package dl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSpec is a library no machine has, so the system loader always misses.
var fakeSpec = Spec{
	Name:      "fake",
	Sonames:   []string{"libpbfake.so.2", "libpbfake.so.1"},
	EnvVar:    "PB_FAKE_LIB",
	WheelDirs: []string{"nvidia/fake/lib"},
}

// layout builds one copy of the fake in every place Find searches:
//
//	env/libpbfake.so.1             the override file
//	ld/libpbfake.so.1              an LD_LIBRARY_PATH folder
//	both/libpbfake.so.{1,2}        a folder holding two sonames
//	cuda/lib64/libpbfake.so.1      $CUDA_HOME/lib64
//	cudapath/lib/libpbfake.so.1    $CUDA_PATH/lib
//	site/nvidia/fake/lib/…so.1     a Python wheel folder
type layout struct{ root string }

func newLayout(t *testing.T) layout {
	root := t.TempDir()
	for _, d := range []string{"env", "ld", "both", "cuda/lib64", "cudapath/lib", "site/nvidia/fake/lib"} {
		buildFake(t, filepath.Join(root, d), "libpbfake.so.1", "1")
	}
	buildFake(t, filepath.Join(root, "both"), "libpbfake.so.2", "2")
	return layout{root}
}

func (l layout) p(rel string) string { return filepath.Join(l.root, rel) }

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFindOrder(t *testing.T) {
	l := newLayout(t)
	noPython := func() []string { t.Error("python asked although an earlier place had the library"); return nil }
	sites := func() []string { return []string{l.p("nosite"), l.p("site")} }
	cases := []struct {
		name   string
		env    map[string]string
		python func() []string
		want   string
	}{
		{"override file wins over everything",
			map[string]string{"PB_FAKE_LIB": l.p("env/libpbfake.so.1"), "LD_LIBRARY_PATH": l.p("ld"), "CUDA_HOME": l.p("cuda")},
			noPython, l.p("env/libpbfake.so.1")},
		{"override may name a folder",
			map[string]string{"PB_FAKE_LIB": l.p("env")}, noPython, l.p("env/libpbfake.so.1")},
		{"LD_LIBRARY_PATH folders in order, before CUDA_HOME",
			map[string]string{"LD_LIBRARY_PATH": l.p("missing") + ":" + l.p("ld"), "CUDA_HOME": l.p("cuda")},
			noPython, l.p("ld/libpbfake.so.1")},
		{"first soname wins inside a folder",
			map[string]string{"LD_LIBRARY_PATH": l.p("both")}, noPython, l.p("both/libpbfake.so.2")},
		{"CUDA_HOME/lib64",
			map[string]string{"CUDA_HOME": l.p("cuda"), "CUDA_PATH": l.p("cudapath")}, noPython, l.p("cuda/lib64/libpbfake.so.1")},
		{"CUDA_PATH/lib when CUDA_HOME is unset",
			map[string]string{"CUDA_PATH": l.p("cudapath")}, noPython, l.p("cudapath/lib/libpbfake.so.1")},
		{"python wheel folder last",
			map[string]string{"LD_LIBRARY_PATH": l.p("missing")}, sites, l.p("site/nvidia/fake/lib/libpbfake.so.1")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lib, err := Searcher{Getenv: envOf(c.env), PythonDirs: c.python}.Find(fakeSpec)
			if err != nil {
				t.Fatal(err)
			}
			defer lib.Close()
			if lib.Path() != c.want {
				t.Errorf("found %s, want %s", lib.Path(), c.want)
			}
			if _, err := lib.Lookup("pb_fake_which"); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestFindNotFoundNamesEveryPlace(t *testing.T) {
	l := newLayout(t)
	empty := l.p("emptydir")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	// A file with the right name that is not a shared library: its line
	// must carry the loader's complaint, not "absent".
	broken := l.p("broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "libpbfake.so.2"), []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LD_LIBRARY_PATH": empty + ":" + broken, "CUDA_HOME": l.p("nocuda")}
	_, err := Searcher{Getenv: envOf(env), PythonDirs: func() []string { return []string{l.p("nosite")} }}.Find(fakeSpec)
	var nf *NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want a *NotFoundError wrapping ErrNotFound", err)
	}
	msg := err.Error()
	lines := strings.Split(msg, "\n")
	want := []string{
		"dl: fake (libpbfake.so.2, libpbfake.so.1) not found; searched, in order:",
		"  $PB_FAKE_LIB: not set",
		"  LD_LIBRARY_PATH " + empty + ": no libpbfake.so.2; no libpbfake.so.1",
		"  LD_LIBRARY_PATH " + broken + ": ", // + the loader's error, then "; no libpbfake.so.1"
		"  $CUDA_HOME/lib64 " + l.p("nocuda/lib64") + ": no such folder",
		"  $CUDA_HOME/lib " + l.p("nocuda/lib") + ": no such folder",
		"  $CUDA_PATH: not set",
		"  system loader libpbfake.so.2: ",
		"  system loader libpbfake.so.1: ",
		"  python site-packages " + l.p("nosite/nvidia/fake/lib") + ": no such folder",
		"to use a library elsewhere, set PB_FAKE_LIB=/path/to/libpbfake.so.2 or add its folder to LD_LIBRARY_PATH",
	}
	if len(lines) != len(want) {
		t.Fatalf("message has %d lines, want %d:\n%s", len(lines), len(want), msg)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[3], "libpbfake.so.2") || !strings.HasSuffix(lines[3], "; no libpbfake.so.1") {
		t.Errorf("broken-file line %q should carry the loader's error for libpbfake.so.2", lines[3])
	}
}

func TestFindOverrideIsTheOnlyPlace(t *testing.T) {
	l := newLayout(t)
	bad := l.p("nowhere/libpbfake.so.1")
	env := map[string]string{"PB_FAKE_LIB": bad, "LD_LIBRARY_PATH": l.p("ld")}
	_, err := Searcher{Getenv: envOf(env), PythonDirs: func() []string { return nil }}.Find(fakeSpec)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound (a wrong override must not fall back)", err)
	}
	if !strings.Contains(err.Error(), "$PB_FAKE_LIB "+bad+": ") {
		t.Errorf("message does not name the override:\n%v", err)
	}
	if strings.Contains(err.Error(), "LD_LIBRARY_PATH "+l.p("ld")) {
		t.Errorf("message lists places after a set override:\n%v", err)
	}
}

func TestFindNoPython(t *testing.T) {
	_, err := Searcher{Getenv: envOf(nil), PythonDirs: func() []string { return nil }}.Find(fakeSpec)
	if err == nil || !strings.Contains(err.Error(), "python site-packages: no python3 or python on PATH answered") {
		t.Errorf("err = %v, want a line saying no python answered", err)
	}
}

// A spec with CacheDirs is looked for in partbench's cache folder
// ($PARTBENCH_CACHE, else $HOME/.cache/partbench) after the system loader
// and before the Python wheels.
func TestFindCacheFolder(t *testing.T) {
	l := newLayout(t)
	buildFake(t, l.p("cache/fake/lib"), "libpbfake.so.1", "1")
	buildFake(t, l.p("home/.cache/partbench/fake/lib"), "libpbfake.so.1", "1")
	spec := fakeSpec
	spec.CacheDirs = []string{"fake/lib"}
	sites := func() []string { return []string{l.p("site")} }
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"PARTBENCH_CACHE before the wheels", map[string]string{"PARTBENCH_CACHE": l.p("cache"), "HOME": l.p("home")},
			l.p("cache/fake/lib/libpbfake.so.1")},
		{"HOME/.cache/partbench without PARTBENCH_CACHE", map[string]string{"HOME": l.p("home")},
			l.p("home/.cache/partbench/fake/lib/libpbfake.so.1")},
		{"wheels when the cache misses", map[string]string{"PARTBENCH_CACHE": l.p("nocache")},
			l.p("site/nvidia/fake/lib/libpbfake.so.1")},
		{"LD_LIBRARY_PATH before the cache", map[string]string{"PARTBENCH_CACHE": l.p("cache"), "LD_LIBRARY_PATH": l.p("ld")},
			l.p("ld/libpbfake.so.1")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lib, err := Searcher{Getenv: envOf(c.env), PythonDirs: sites}.Find(spec)
			if err != nil {
				t.Fatal(err)
			}
			defer lib.Close()
			if lib.Path() != c.want {
				t.Errorf("found %s, want %s", lib.Path(), c.want)
			}
		})
	}
	_, err := Searcher{Getenv: envOf(map[string]string{"PARTBENCH_CACHE": l.p("nocache")}), PythonDirs: func() []string { return nil }}.Find(spec)
	if want := "  partbench cache " + l.p("nocache/fake/lib") + ": no such folder"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want a line %q", err, want)
	}
	_, err = Searcher{Getenv: envOf(nil), PythonDirs: func() []string { return nil }}.Find(spec)
	if want := "  partbench cache: neither $PARTBENCH_CACHE nor $HOME is set"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want a line %q", err, want)
	}
}
