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

// sortImports splits backendImports' "file: import" lines into those of
// the registry itself (exec/backend) and those outside exec/, which break
// the rule; the rest of exec/ (the run loop, the backends, the
// communicators) may import a backend.
func sortImports(all []string) (inRegistry, bad []string) {
	for _, f := range all {
		dir := f[:strings.IndexByte(f, ':')]
		dir = filepath.ToSlash(filepath.Dir(dir))
		top, _, _ := strings.Cut(dir, "/")
		switch {
		case dir == "exec/backend":
			inRegistry = append(inRegistry, f)
		case top == "exec":
		default:
			bad = append(bad, f)
		}
	}
	return inRegistry, bad
}

// Outside exec/, only the registry's callers reach a backend: no non-test
// file anywhere outside exec/ (calib included) imports exec/cpu or
// exec/cuda. Test files are not scanned: some build a backend's Compute
// directly as a known double (calib's optimes_test.go and cudastep_test.go
// time exec/cpu Computes; calib's cuda_registry_test.go checks exec/cuda's
// Compute against the interface calib asserts).
func TestBackendsOnlyThroughTheRegistry(t *testing.T) {
	root := filepath.Join("..", "..")
	inRegistry, bad := sortImports(backendImports(t, root))
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

// The sort can fail: a calib file importing exec/cuda (what calib/cuda.go
// did before it went through Registry.Calibrator) is outside exec/ and
// breaks the rule; exec/'s own files do not.
func TestSortImports(t *testing.T) {
	in, bad := sortImports([]string{
		"calib/cuda.go: " + module + "exec/cuda",
		"cmd/partbench/run.go: " + module + "exec/cpu/sub",
		"exec/backend/default.go: " + module + "exec/cpu",
		"exec/check.go: " + module + "exec/cpu",
		"exec/cuda/check.go: " + module + "exec/cpu",
		"execution/x.go: " + module + "exec/cpu", // "exec" is a whole directory name, not a prefix
	})
	wantIn := []string{"exec/backend/default.go: " + module + "exec/cpu"}
	wantBad := []string{"calib/cuda.go: " + module + "exec/cuda", "cmd/partbench/run.go: " + module + "exec/cpu/sub", "execution/x.go: " + module + "exec/cpu"}
	if !slices.Equal(in, wantIn) || !slices.Equal(bad, wantBad) {
		t.Errorf("in registry %q, want %q; outside %q, want %q", in, wantIn, bad, wantBad)
	}
}
