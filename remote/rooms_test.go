package remote_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRoomsImportOneWay: the remote rooms depend one way. wire (protocol,
// framing, the step contract) imports no other room; the server and the
// client (this package, with the trials driver) import wire and never each
// other; only loopback, which runs both in one process, imports both.
// Dependencies are transitive (go list's Deps), test files aside.
func TestRoomsImportOneWay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/partbench/partbench/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", mod+"remote/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string]map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		room := strings.TrimPrefix(f[0], mod)
		deps[room] = map[string]bool{}
		for _, d := range f[1:] {
			deps[room][strings.TrimPrefix(d, mod)] = true
		}
	}
	forbidden := map[string][]string{
		"remote/wire":   {"remote", "remote/server", "remote/loopback"},
		"remote/server": {"remote", "remote/loopback"},
		"remote":        {"remote/server", "remote/loopback"},
	}
	for room, never := range forbidden {
		d, ok := deps[room]
		if !ok {
			t.Fatalf("go list did not list %s", room)
		}
		if !d["remote/remotepb"] {
			t.Errorf("%s does not depend on remote/remotepb: the listing is not what this test reads", room)
		}
		for _, n := range never {
			if d[n] {
				t.Errorf("%s depends on %s", room, n)
			}
		}
	}
	// The check can fail: loopback depends on both sides.
	if d := deps["remote/loopback"]; !d["remote"] || !d["remote/server"] || !d["remote/wire"] {
		t.Errorf("remote/loopback's dependencies lack remote, remote/server or remote/wire: the check above would not see them")
	}
}
