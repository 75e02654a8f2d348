package backend

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/partbench/partbench/"

// backendPackages are the backends' own packages: outside exec/ the
// registry (this package) is the only way to them.
var backendPackages = []string{module + "exec/cpu", module + "exec/cuda"}

// allowedBackendImporters are the directories outside exec/ whose non-test
// files may still import a backend package directly. calib is the one left:
// its measurements construct exec/cpu and exec/cuda themselves until they go
// through the registry too.
var allowedBackendImporters = []string{"calib"}

// backendImports lists "file: import" for every non-test .go file under
// root that imports a backend package (or one under it), with file relative
// to root; testdata and hidden directories are skipped.
func backendImports(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			for _, b := range backendPackages {
				if p == b || strings.HasPrefix(p, b+"/") {
					found = append(found, filepath.ToSlash(rel)+": "+p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	return found
}

// Outside exec/, only the registry's callers reach a backend: no non-test
// file imports exec/cpu or exec/cuda except in allowedBackendImporters.
func TestBackendsOnlyThroughTheRegistry(t *testing.T) {
	root := filepath.Join("..", "..")
	all := backendImports(t, root)
	var inRegistry, bad []string
	for _, f := range all {
		dir := f[:strings.IndexByte(f, ':')]
		dir = filepath.ToSlash(filepath.Dir(dir))
		top, _, _ := strings.Cut(dir, "/")
		switch {
		case dir == "exec/backend":
			inRegistry = append(inRegistry, f)
		case top == "exec":
		case slices.Contains(allowedBackendImporters, top):
		default:
			bad = append(bad, f)
		}
	}
	// The scan can fail: the registration site itself imports both.
	for _, b := range backendPackages {
		if !slices.Contains(inRegistry, "exec/backend/default.go: "+b) {
			t.Errorf("the scan did not find exec/backend/default.go's import of %s (found %q)", b, inRegistry)
		}
	}
	for _, f := range bad {
		t.Errorf("%s: reach the backend through exec/backend's Registry instead", f)
	}
}
