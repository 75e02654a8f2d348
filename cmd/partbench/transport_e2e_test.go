package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/exec/launch"
)

// TestLocalLauncherTransports runs 4 local ranks (TP 2 × PP 2) over each
// transport: counts agree with the Program exactly either way, and the
// results say which transport carried them.
func TestLocalLauncherTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	for _, tc := range []struct{ transport, want string }{
		{"shm", "shm (partbench's ring communicator; transport shm: shared memory with 3 same-host peer(s), TCP with 0)"},
		{"tcp", "tcp (partbench's ring communicator; transport tcp)"},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			dir := t.TempDir()
			r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "run", "--nproc", "4", "--config", "test/tp2pp2-tiny", "--backend", "cpu", "--out", dir, "--transport", tc.transport, "--quiet")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.out)
			}
			doc := readResults(t, dir)
			checkRunDoc(t, doc, 4)
			if d := fmt.Sprint(doc["devices"]); !strings.Contains(d, tc.want) {
				t.Fatalf("devices %s, want %q", d, tc.want)
			}
		})
	}
}

func TestTransportFlagRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--nproc", "2", "--config", "test/tp2pp2-tiny", "--backend", "cpu", "--transport", "rdma"},
			`--transport: unknown transport "rdma" (want auto, tcp or shm)`},
		{[]string{"run", "--check", "--config", "test/tp2pp2-tiny", "--transport", "shm"},
			"--transport shm: --check and --emulate-ranks run every rank in this process"},
	} {
		r := runCmd(t, 30*time.Second, cleanEnv(), bin, tc.args...)
		if r.code == 0 || !strings.Contains(r.out, tc.want) {
			t.Errorf("%v: exit %d output %q, want an error containing %q", tc.args, r.code, r.out, tc.want)
		}
	}
}

// TestLocalLauncherBinds: two local CPU-backend ranks are bound to a CPU
// block each by default (--bind-to auto) where the affinity mask has two
// CPUs or more, and the results' notes say so; --bind-to none leaves them
// unbound and says nothing. Bad values and --bind-to where no rank is
// launched are refused.
func TestLocalLauncherBinds(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	cpus, err := launch.UsableCPUs()
	if err != nil {
		t.Skip(err)
	}
	// A TP-2 copy of test/tp4-tiny: two ranks, one stage.
	b, err := os.ReadFile(filepath.Join("..", "..", "configs", "test", "tp4-tiny.toml"))
	if err != nil {
		t.Fatal(err)
	}
	tp2 := strings.Replace(strings.Replace(string(b), "\ntp = 4", "\ntp = 2", 1), "gpus_per_node = 4", "gpus_per_node = 2", 1)
	cfg := filepath.Join(t.TempDir(), "tp2-tiny.toml")
	if err := os.WriteFile(cfg, []byte(tp2), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "--bind-to auto: the host's 2 local ranks bound to"
	if len(cpus) < 2 {
		want = "--bind-to auto: not bound: 2 local ranks and 1 CPUs"
	}
	checkBindNotes(t, want, bin, "run", "--nproc", "2", "--config", cfg, "--backend", "cpu")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--nproc", "2", "--config", cfg, "--backend", "cpu", "--bind-to", "socket"}, `--bind-to "socket": allowed auto, none, core`},
		{[]string{"run", "--check", "--config", "test/tp2pp2-tiny", "--bind-to", "core"}, "--bind-to core: --check and --emulate-ranks run every rank in this process"},
	} {
		r := runCmd(t, 30*time.Second, cleanEnv(), bin, tc.args...)
		if r.code == 0 || !strings.Contains(r.out, tc.want) {
			t.Errorf("%v: exit %d output %q, want an error containing %q", tc.args, r.code, r.out, tc.want)
		}
	}
}

// checkBindNotes runs the command argv (a run, given its --out, --bind-to,
// --quiet and two iterations here) with --bind-to auto, whose results'
// notes must hold want, and with --bind-to none, whose notes must name no
// binding.
func checkBindNotes(t *testing.T, want string, argv ...string) {
	t.Helper()
	for _, tc := range []struct{ bind, want string }{{"auto", want}, {"none", ""}} {
		dir := t.TempDir()
		args := append(append([]string{}, argv[1:]...), "--out", dir, "--bind-to", tc.bind, "--quiet", "--iterations", "2")
		r := runCmd(t, 2*time.Minute, cleanEnv(), argv[0], args...)
		if r.code != 0 {
			t.Fatalf("--bind-to %s: exit %d\n%s", tc.bind, r.code, r.out)
		}
		notes := fmt.Sprint(readResults(t, dir)["notes"])
		if tc.want != "" && !strings.Contains(notes, tc.want) {
			t.Errorf("--bind-to %s: notes %s, want %q", tc.bind, notes, tc.want)
		}
		if tc.want == "" && strings.Contains(notes, "--bind-to") {
			t.Errorf("--bind-to %s: notes %s say a binding", tc.bind, notes)
		}
	}
}
