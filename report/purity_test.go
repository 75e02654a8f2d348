package report

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// computing are the packages that estimate, fit, measure or analyse: report
// draws what they compute and calls none of their functions (their types,
// constants and methods on data it is handed are fine).
var computing = []string{"sim", "calib", "suite", "serving", "remote", "partition", "compare", "exec", "resume", "claims", "tracestats", "stats"}

// reportDebts are the calls report still makes into computing packages,
// each with why it is there; a new one fails the test, and one that goes
// away must leave this list too.
var reportDebts = map[string]string{
	"collectives.go: sim.NCCLAlgoName":   "a name for a table cell, not a computation",
	"plotscatter.go: stats.MeasuredBand": "the tolerance band's edges, drawn as run flags them",
}

// exportedFuncs lists a package's exported package-level functions.
func exportedFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fs := token.NewFileSet()
	pkgs, err := parser.ParseDir(fs, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && ast.IsExported(fd.Name.Name) {
					m[fd.Name.Name] = true
				}
			}
		}
	}
	return m
}

// report renders and nothing else: no call to an estimator, fitter,
// analysis or measurement outside the listed debts.
func TestReportCallsNoComputingPackage(t *testing.T) {
	funcs := map[string]map[string]bool{}
	for _, p := range computing {
		funcs[p] = exportedFuncs(t, filepath.Join("..", p))
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	fs := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fs, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && funcs[id.Name][sel.Sel.Name] {
				found[name+": "+id.Name+"."+sel.Sel.Name] = true
			}
			return true
		})
	}
	var bad []string
	for k := range found {
		if _, ok := reportDebts[k]; !ok {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	for _, k := range bad {
		t.Errorf("report calls %s: compute in the caller and hand report the data", k)
	}
	for k := range reportDebts {
		if !found[k] {
			t.Errorf("reportDebts lists %s, which report no longer calls: take it off the list", k)
		}
	}
}
