package topology_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The pure packages build and link without go-nvml and cgo (issue 11 item
// 4): NVML discovery lives in topology/nvmldiscover, which none of them
// imports. CGO_ENABLED=1 is set so that cgo-only files count.
func TestPurePackagesLinkNeitherNVMLNorCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	// report is not listed yet: it imports exec, and exec's net imports
	// runtime/cgo (the cgo DNS resolver) until comparison leaves exec.
	pure := []string{"configs", "partition", "sim", "topology", "topology/topologytest"}
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	for _, p := range pure {
		args = append(args, "github.com/partbench/partbench/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(pure) {
		t.Fatalf("go list listed %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/NVIDIA/go-nvml") || d == "runtime/cgo" {
			t.Errorf("%s is a dependency of %v", d, pure)
		}
	}
	// The check can fail: nvmldiscover itself has both.
	cmd = exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/partbench/partbench/topology/nvmldiscover")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if s := " " + strings.Join(strings.Fields(string(out)), " ") + " "; !strings.Contains(s, " runtime/cgo ") || !strings.Contains(s, "github.com/NVIDIA/go-nvml/pkg/nvml ") {
		t.Errorf("nvmldiscover's deps lack runtime/cgo or go-nvml: the check above would not see them")
	}
}
