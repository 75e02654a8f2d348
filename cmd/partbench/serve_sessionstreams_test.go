package main

import (
	"strings"
	"testing"
	"time"
)

// TestServeMaxSessionStreamsFlag: --max-session-streams outside 1 to 256,
// or given with --transport tcp (where it cannot act), is refused before
// the server starts, naming the flag, the value and what is allowed.
func TestServeMaxSessionStreamsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-session-streams", "0"}, "--max-session-streams 0: must be 1 to 256"},
		{[]string{"--max-session-streams", "-3"}, "--max-session-streams -3: must be 1 to 256"},
		{[]string{"--max-session-streams", "257"}, "--max-session-streams 257: must be 1 to 256"},
		{[]string{"--max-session-streams", "8", "--transport", "tcp"}, "--max-session-streams 8: applies to --transport grpc only"},
	} {
		done := make(chan struct{})
		var out string
		var err error
		go func() {
			defer close(done)
			out, err = runCLI(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, c.args...)...)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("serve %v: still running after 20 s (the flag was not refused)", c.args)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: %v (output %q), want an error containing %q", c.args, err, out, c.want)
		}
	}
}
