package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResumeAndRemoteTokenFileChecked: resume takes --token-file (and
// --tls-ca) like remote, with the same checks before any work: a named pipe
// or a device is refused at once, naming the flag; --tls-ca with
// --spawn-server is refused (a spawned server has no TLS).
func TestResumeAndRemoteTokenFileChecked(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"resume", "--strategies", "stateful", "--server", "127.0.0.1:1", "--token-file", fifo}, []string{"--token-file", "not a regular file"}},
		{[]string{"resume", "--strategies", "stateful", "--server", "127.0.0.1:1", "--token-file", "/dev/zero"}, []string{"--token-file", "not a regular file"}},
		{[]string{"resume", "--strategies", "stateful", "--spawn-server", "--tls-ca", ca}, []string{"--tls-ca", "--spawn-server"}},
		{[]string{"resume", "--strategies", "stateful", "--server", "127.0.0.1:1", "--tls-ca", ca}, []string{"--tls-ca", "no PEM certificate"}},
		{[]string{"remote", "--config", "test/single-tiny", "--mode", "stateful", "--server", "127.0.0.1:1", "--token-file", fifo}, []string{"--token-file", "not a regular file"}},
	} {
		done := make(chan struct{})
		var out string
		var err error
		go func() {
			defer close(done)
			out, err = runCLI(t, append(c.args, "--output-dir", filepath.Join(dir, "out"))...)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%v: still running after 20 s", c.args)
		}
		msg := out
		if err != nil {
			msg += err.Error()
		}
		for _, w := range c.want {
			if err == nil || !strings.Contains(msg, w) {
				t.Errorf("%v: %v (output %q); want an error naming %q", c.args, err, out, w)
			}
		}
	}
}
