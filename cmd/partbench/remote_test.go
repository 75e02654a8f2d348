package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// TestRemoteSpawnServer: 'remote --spawn-server' starts a server process,
// runs every mode and writes one CSV row per recorded trial and phase; the
// tokens and bytes checks pass (exit 0).
func TestRemoteSpawnServer(t *testing.T) {
	bin := partbenchBinary(t)
	dir := t.TempDir()
	r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "remote", "--config", "test/single-tiny", "--spawn-server", "--trials", "2", "--warmup", "1", "--out", dir)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.out)
	}
	f, err := os.Open(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 4 modes × (prefill, decode) × 2 trials + kv's load × 2 + the header.
	if len(recs) != 1+16+2 {
		t.Fatalf("results.csv has %d records, want 19:\n%v", len(recs), recs)
	}
	doc := readResults(t, dir)
	if g, _ := doc["gap_bytes_ratio"].(float64); g <= 1 {
		t.Errorf("gap_bytes_ratio %v: naive must ship more than stateful", doc["gap_bytes_ratio"])
	}
	if _, bad := doc["mismatches"]; bad {
		t.Errorf("mismatches reported: %v", doc["mismatches"])
	}
	// compare and plot read the results by their schema.
	res := filepath.Join(dir, "results.json")
	r = runCmd(t, time.Minute, cleanEnv(), bin, "compare", res, res)
	if r.code != 0 || !strings.Contains(r.out, "naive decode") || !strings.Contains(r.out, "gap_bytes_ratio") {
		t.Errorf("compare of two results.json: exit %d:\n%s", r.code, r.out)
	}
	png := filepath.Join(dir, "remote.png")
	r = runCmd(t, time.Minute, cleanEnv(), bin, "plot", res, "--out", png)
	if st, err := os.Stat(png); r.code != 0 || err != nil || st.Size() < 1000 {
		t.Errorf("plot results.json: exit %d, %v:\n%s", r.code, err, r.out)
	}
}

// TestServeProcess: 'serve' on port 0 prints its address, serves 'remote'
// over raw TCP, and drains and exits 0 on SIGTERM.
func TestServeProcess(t *testing.T) {
	bin := partbenchBinary(t)
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--transport", "tcp")
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("serve printed nothing")
	}
	addr, ok := strings.CutPrefix(sc.Text(), "partbench serve: tcp listening on ")
	if !ok {
		t.Fatalf("serve said %q", sc.Text())
	}
	dir := t.TempDir()
	r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "remote", "--config", "test/single-tiny", "--server", addr, "--transport", "tcp",
		"--mode", "stateful", "--trials", "1", "--warmup", "0", "--out", dir)
	if r.code != 0 {
		t.Fatalf("remote exit %d:\n%s", r.code, r.out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(rest.String(), "drained") {
			t.Errorf("serve after SIGTERM: %v, said %q", err, rest.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit within 30 s of SIGTERM")
	}
}

// TestServeRefusesOpenBindWithoutToken: a non-loopback --listen without
// --token-file exits non-zero naming the flag.
func TestServeRefusesOpenBindWithoutToken(t *testing.T) {
	r := runCmd(t, time.Minute, cleanEnv(), partbenchBinary(t), "serve", "--listen", "0.0.0.0:0")
	if r.code == 0 || !strings.Contains(r.out, "requires a token (--token-file)") {
		t.Errorf("exit %d, output %q: want a refusal naming --token-file", r.code, r.out)
	}
}

// TestRemoteNeedsServer: a remote mode without --server or --spawn-server
// is a usage error, not a hang.
func TestRemoteNeedsServer(t *testing.T) {
	_, err := runCLI(t, "remote", "--config", "test/single-tiny", "--mode", "naive", "--out", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--spawn-server") {
		t.Errorf("err %v: want one naming --server and --spawn-server", err)
	}
}

// TestModelRemoteDryRun prints each mode's bytes per decode step exactly as
// partition counts them, and the naive/stateful ratio.
func TestModelRemoteDryRun(t *testing.T) {
	out, err := runCLI(t, "model", "--dry-run", "--config", "test/single-tiny", "--remote-link", "25gbe", "--mode", "naive")
	if err != nil {
		t.Fatal(err)
	}
	c, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	// The representative decode step: min(output_tokens / 2, steps − 1) = 2.
	for _, m := range partition.RemoteModes {
		b, err := plan.RemoteBytesOf(m, partition.RemoteRequest{Phase: partition.Decode, Step: 2}, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, " "+strconv.FormatInt(b.Up(), 10)+" ") {
			t.Errorf("%s: decode up bytes %d not printed:\n%s", m, b.Up(), out)
		}
	}
	for _, s := range []string{"naive *", "25 Gb/s", "naive/stateful per decode step"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// paddingEngine is a server engine whose replies carry one tensor more than
// the model's payload: 8 B the Program does not know of.
type paddingEngine struct{ wire.Engine }

type paddingSession struct{ wire.EngineSession }

func (e paddingEngine) OpenSession(p *partition.Plan, m partition.RemoteMode, o partition.RemoteOptions) (wire.EngineSession, error) {
	s, err := e.Engine.OpenSession(p, m, o)
	if err != nil {
		return nil, err
	}
	return paddingSession{s}, nil
}

func (s paddingSession) Step(ctx context.Context, in *wire.StepInput) (*wire.StepOutput, error) {
	out, err := s.EngineSession.Step(ctx, in)
	if err == nil {
		out.Tensors = append(out.Tensors, wire.Tensor{Name: "pad", ElemBytes: 4, Shape: []int64{2}, Data: make([]byte, 8)})
	}
	return out, err
}

// TestRemoteExit4OnPayloadMismatch: a server whose replies carry bytes the
// model does not (8 B per request) makes 'partbench remote' exit 4 naming
// the requests, after writing its results; the same run against an honest
// server exits 0.
func TestRemoteExit4OnPayloadMismatch(t *testing.T) {
	bin := partbenchBinary(t)
	for _, tc := range []struct {
		eng  wire.Engine
		code int
	}{{server.NewCPUEngine(), 0}, {paddingEngine{server.NewCPUEngine()}, exitPayloadMismatch}} {
		srv, err := server.NewServer(server.ServerConfig{}, tc.eng)
		if err != nil {
			t.Fatal(err)
		}
		addr, err := srv.ListenGRPC("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "remote", "--config", "test/single-tiny", "--server", addr.String(),
			"--mode", "stateful", "--trials", "1", "--warmup", "0", "--out", dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(ctx)
		cancel()
		if r.code != tc.code {
			t.Fatalf("%T: exit %d, want %d:\n%s", tc.eng, r.code, tc.code, r.out)
		}
		if tc.code == 0 {
			continue
		}
		// 1 prefill + 3 decode steps of test/single-tiny, each 8 B over.
		if !strings.Contains(r.out, "payload bytes differ from the model") || !strings.Contains(r.out, "in 4 requests") ||
			!strings.Contains(r.out, "stateful decode step 2: payload up 16 B, down 24 B; the model says up 16 B, down 16 B") {
			t.Errorf("exit 4 without naming the requests:\n%s", r.out)
		}
		if bad, _ := readResults(t, dir)["mismatches"].([]any); len(bad) != 4 {
			t.Errorf("results.json lists %d mismatches, want the 4 requests", len(bad))
		}
	}
}

// TestModelRemoteOverheadFromCalibration: model --dry-run --remote-link
// prices each request with the calibration's measured request overhead
// unless --remote-overhead is given; the modeled decode step grows by
// exactly that overhead (5 ms here) against the same profile without it.
func TestModelRemoteOverheadFromCalibration(t *testing.T) {
	cal := cpuLikeCalibration()
	without := writeTestCalibration(t, cal)
	cal.Remote = &configs.RemoteCalibration{RequestOverheadS: 5e-3, Transport: "grpc", Config: "test/single-tiny", Samples: 60}
	with := writeTestCalibration(t, cal)
	decode := func(args ...string) (string, float64) {
		t.Helper()
		out, err := runCLI(t, append([]string{"model", "--dry-run", "--config", "test/single-tiny", "--remote-link", "loopback", "--format", "markdown"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		// The latency table's stateful row: | stateful | prefill | prefill transfer | decode step | …
		_, lat, _ := strings.Cut(out, "modeled latency")
		for _, l := range strings.Split(lat, "\n") {
			f := strings.Split(l, "|")
			if len(f) > 5 && strings.TrimSpace(f[1]) == "stateful" {
				if v, err := strconv.ParseFloat(strings.TrimSpace(f[4]), 64); err == nil {
					return out, v
				}
			}
		}
		t.Fatalf("no stateful latency row in:\n%s", out)
		return "", 0
	}
	out, base := decode("--calibration", without)
	if !strings.Contains(out, "request overhead 0 µs") {
		t.Errorf("a calibration without [remote] should leave the overhead 0:\n%s", out)
	}
	out, got := decode("--calibration", with)
	if !strings.Contains(out, "request overhead 5e+03 µs") {
		t.Errorf("the calibration's 5 ms overhead is not used:\n%s", out)
	}
	if d := got - base; d < 4.999 || d > 5.001 {
		t.Errorf("stateful decode step %.3f ms with the overhead, %.3f ms without: +%.3f ms, want +5", got, base, d)
	}
	out, _ = decode("--calibration", with, "--remote-overhead", "0")
	if !strings.Contains(out, "request overhead 0 µs") {
		t.Errorf("--remote-overhead 0 did not win over the calibration:\n%s", out)
	}
}
