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
	if err := expand(files, &b, name, map[string]bool{}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Module is the source of every kernel file in one translation unit (in
// Files order, headers once): what the backend compiles and loads as one
// module. Kernel files must therefore not define the same name twice.
func Module() (string, error) {
	var b strings.Builder
	seen := map[string]bool{}
	for _, f := range Files() {
		if err := expand(files, &b, f, seen); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// expand writes file name of fsys with its .cuh includes expanded, each
// header once per seen.
func expand(fsys fs.FS, b *strings.Builder, name string, seen map[string]bool) error {
	if seen[name] {
		return nil
	}
	seen[name] = true
	raw, err := fs.ReadFile(fsys, name)
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
			if _, err := fs.Stat(fsys, m[1]); err != nil {
				return fmt.Errorf("kernels: %s line %d includes %q, which is not in exec/cuda/kernels", name, n, m[1])
			}
			if err := expand(fsys, b, m[1], seen); err != nil {
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
