package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
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
