package arch

import (
	"go/build"
	"strings"
	"testing"
)

const module = "github.com/partbench/partbench/"

// moduleDeps is every package of this module that pkg imports, directly or
// not (test files excluded).
func moduleDeps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		p, err := build.Import(path, ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) && !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(pkg)
	return seen
}

// TestImports: the description is at the bottom — it imports no package
// that describes or runs a model.
func TestImports(t *testing.T) {
	for dep := range moduleDeps(t, module+"arch") {
		if dep != module+"fileio" {
			t.Errorf("arch imports %s (allowed: fileio only)", dep)
		}
	}
}
