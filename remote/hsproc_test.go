package remote

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Process helpers of the hostile-client tests (hostile_test.go,
// load_test.go): a child is this test binary re-executed with HSRV_CHILD
// set (see init in hostile_test.go).

// hsChild is a running child process and what it printed.
type hsChild struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *strings.Builder
	done   chan struct{} // closed once the process was waited for
	err    error         // its exit, valid after done
}

func hsStartChild(t *testing.T, env ...string) *hsChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &hsChild{cmd: cmd, lines: make(chan string, 16), stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
		close(c.lines)
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // an error once it has exited
		<-c.done
	})
	return c
}

// line waits (up to 20 s) for a line starting with prefix.
func (c *hsChild) line(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("child ended before printing %q; stderr: %s", prefix, c.stderr)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("child printed no %q in 20 s; stderr: %s", prefix, c.stderr)
		}
	}
}

// wait waits up to bound for the child's exit.
func (c *hsChild) wait(t *testing.T, bound time.Duration) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(bound):
		t.Fatalf("child still running after %s; stderr: %s", bound, c.stderr)
		return nil
	}
}

// hsWaitFor polls cond until it holds, failing after bound.
func hsWaitFor(t *testing.T, bound time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
