//go:build cgo

package dl

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildFake compiles a one-function shared library into dir/name with gcc
// and returns its path. which is the number pb_fake_which returns, so a
// test can tell copies apart by symbol as well as by path.
func buildFake(t *testing.T, dir, name, which string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("no gcc to build a fake shared library: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "fake.c")
	code := "int pb_fake_which(void) { return " + which + "; }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if b, err := exec.Command(gcc, "-shared", "-fPIC", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}
