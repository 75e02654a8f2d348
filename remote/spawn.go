package remote

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/partbench/partbench/configs"
)

// ServerChild is a spawned `partbench serve`.
type ServerChild struct {
	cmd  *exec.Cmd
	done chan error
}

// SpawnServer starts this binary's `serve` (it must be partbench) on a free
// loopback port with the CPU backend (on Linux it gets SIGKILL when this
// process ends, however it ends), and returns it
// with the address it printed on its first line (within 30 s); extra flags
// follow the defaults (a later --backend wins).
func SpawnServer(transport string, stderr io.Writer, extra ...string) (*ServerChild, string, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--transport", transport, "--backend", configs.BackendCPU}, extra...)...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = childProcAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	c := &ServerChild{cmd: cmd, done: make(chan error, 1)}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if !sent {
				lines <- sc.Text()
				sent = true
			}
		}
		close(lines)
		c.done <- cmd.Wait()
	}()
	prefix := "partbench serve: " + transport + " listening on "
	select {
	case l, ok := <-lines:
		if ok && strings.HasPrefix(l, prefix) {
			return c, strings.TrimPrefix(l, prefix), nil
		}
		cmd.Process.Kill()
		return nil, "", fmt.Errorf("the server said %q, not %q", l, prefix+"ADDR")
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, "", fmt.Errorf("the server did not listen within 30 s")
	}
}

// Stop sends SIGTERM and waits for the drain (killing after 30 s).
func (c *ServerChild) Stop(stderr io.Writer) {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		if err != nil {
			fmt.Fprintf(stderr, "partbench remote: spawned server: %v\n", err)
		}
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}
