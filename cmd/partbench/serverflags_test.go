package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
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

// TestServeSecondSignalExitCode: the built binary's `serve`, draining a
// request whose data never comes (the drain would wait for it up to the
// read timeout), stops at once on a second SIGTERM: exit 143 (128 +
// SIGTERM) within 5 s, saying why.
func TestServeSecondSignalExitCode(t *testing.T) {
	bin := partbenchBinary(t)
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--drain-timeout", "60s")
	cmd.Env = cleanEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	first := <-lines
	addr, ok := strings.CutPrefix(first, "partbench serve: grpc listening on ")
	if !ok {
		t.Fatalf("serve said %q; stderr %s", first, stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	rc := pb.NewRemoteClient(cc)
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(cfg)
	opened, err := rc.Open(ctx, &pb.OpenRequest{ConfigJson: js, ConfigHash: cfg.Hash(), Mode: pb.Mode_MODE_STATEFUL})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.RemotePayloadOf(partition.RemoteStateful, partition.RemoteRequest{Phase: partition.Prefill}, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &pb.StepHeader{SessionId: opened.SessionId, Phase: pb.Phase_PHASE_PREFILL}
	for _, u := range pl.Up {
		h.Tensors = append(h.Tensors, &pb.TensorInfo{Name: u.Name, ElemBytes: int32(u.ElemBytes), Shape: u.Shape, Bytes: u.Bytes})
	}
	st, err := rc.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pb.Frame{Kind: &pb.Frame_Header{Header: h}}); err != nil {
		t.Fatal(err)
	}
	// A call after it on the same connection: once it is answered, the
	// server has read the step's frames (HTTP/2 frames of one connection
	// are read in order). The step's data never comes.
	if _, err := rc.Close(ctx, &pb.CloseRequest{SessionId: "none"}); err == nil {
		t.Fatal("closing a session that does not exist succeeded")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	for l := range lines {
		if strings.HasPrefix(l, "partbench serve: draining") {
			break
		}
	}
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 143 || !strings.Contains(stderr.String(), "second") {
			t.Errorf("serve after a second SIGTERM: %v, stderr %q; want exit 143 naming the second signal", err, stderr.String())
		}
		t.Logf("stopped %v after the second signal", time.Since(t0))
	case <-time.After(5 * time.Second):
		t.Fatalf("serve still draining 5 s after a second SIGTERM; stderr %s", stderr.String())
	}
}
