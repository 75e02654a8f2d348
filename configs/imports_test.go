package configs

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsOneWay: configs reads the model description (arch) and links
// neither the checkpoint reader nor the model definition nor partition.
func TestImportsOneWay(t *testing.T) {
	const module = "github.com/partbench/partbench/"
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
	walk(module + "configs")
	if !seen[module+"arch"] {
		t.Errorf("configs does not read the model description (arch)")
	}
	for _, no := range []string{"checkpoint", "model", "partition", "sim", "exec"} {
		if seen[module+no] {
			t.Errorf("configs links %s", no)
		}
	}
}
