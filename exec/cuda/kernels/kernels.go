package kernels

import (
	"bufio"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.cu *.cuh
var files embed.FS

// FS is every embedded .cu and .cuh file.
func FS() fs.FS { return files }

// Files are the kernel files (*.cu), sorted by name.
func Files() []string {
	m, _ := fs.Glob(files, "*.cu")
	sort.Strings(m)
	return m
}

// Headers are the shared headers (*.cuh), sorted by name.
func Headers() []string {
	m, _ := fs.Glob(files, "*.cuh")
	sort.Strings(m)
	return m
}

// Raw is a file's text as committed.
func Raw(name string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("kernels: no file %q (have %s)", name, strings.Join(append(Files(), Headers()...), ", "))
	}
	return string(b), nil
}

// includeLine is `#include "name"`.
var includeLine = regexp.MustCompile(`^\s*#\s*include\s*"([^"]+)"\s*$`)

// Source is file name with every `#include "x.cuh"` of an embedded header
// replaced by the header's text (each header once; #line directives keep
// the compiler's messages pointing at the right file and line), so NVRTC
// compiles it without an include path. Includes of other files stay as
// they are.
func Source(name string) (string, error) {
	var b strings.Builder
	if err := expand(embedded, &b, name, map[string]bool{}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Expand is text (named name in messages) with its includes of the
// embedded headers expanded as Source does: for a kernel file that is not
// embedded here (a test's, a mutated copy).
func Expand(name, text string) (string, error) {
	read := func(n string) ([]byte, error) {
		if n == name {
			return []byte(text), nil
		}
		return fs.ReadFile(files, n)
	}
	var b strings.Builder
	if err := expand(read, &b, name, map[string]bool{}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Module is the source of the named kernel files in one translation unit
// (in the order given, each header once): what the backend compiles and
// loads as one module. The files must not define the same name twice.
func Module(names ...string) (string, error) {
	if len(names) == 0 {
		return "", fmt.Errorf("kernels: a module of no files")
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, f := range names {
		if path.Ext(f) != ".cu" {
			return "", fmt.Errorf("kernels: %q is not a kernel file (.cu)", f)
		}
		if err := expand(embedded, &b, f, seen); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// embedded reads an embedded file.
func embedded(name string) ([]byte, error) { return fs.ReadFile(files, name) }

// expand writes file name (read with read) with its .cuh includes
// expanded, each header once per seen.
func expand(read func(string) ([]byte, error), b *strings.Builder, name string, seen map[string]bool) error {
	if seen[name] {
		return nil
	}
	seen[name] = true
	raw, err := read(name)
	if err != nil {
		return fmt.Errorf("kernels: no file %q", name)
	}
	text := string(raw)
	fmt.Fprintf(b, "#line 1 %q\n", name)
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := includeLine.FindStringSubmatch(line); m != nil && path.Ext(m[1]) == ".cuh" {
			if _, err := read(m[1]); err != nil {
				return fmt.Errorf("kernels: %s line %d includes %q, which is not in exec/cuda/kernels", name, n, m[1])
			}
			if err := expand(read, b, m[1], seen); err != nil {
				return err
			}
			fmt.Fprintf(b, "#line %d %q\n", n+1, name)
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return sc.Err()
}
