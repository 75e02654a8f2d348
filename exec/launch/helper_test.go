//go:build unix

package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the ranks Spawn starts: with PB_LAUNCH_HELPER
// set, TestMain runs one rank's behaviour instead of the tests.
//
// PB_LAUNCH_HELPER is a comma list, one entry per rank (picked by RANK):
//
//	N        exit with status N
//	N@MS     exit with status N after MS milliseconds
//	killS    kill itself with signal S
//	hang     ignore SIGINT/SIGTERM and sleep (only SIGKILL ends it)
//	waitsig  write PB_DIR/ready.RANK, then sleep with default signal handling
//	env      write Detect's result to PB_DIR/env.RANK and exit 0
//	grand    start a grandchild that hangs, write its pid to PB_DIR/grand.RANK, hang
//	say      print "hello from RANK" and a line without newline, exit 0
//
// PB_LAUNCH_HELPER=launcher runs Spawn itself (2 ranks of PB_LAUNCH_CHILD)
// and exits with its code.
func TestMain(m *testing.M) {
	if spec := os.Getenv("PB_LAUNCH_HELPER"); spec != "" {
		os.Exit(helper(spec))
	}
	os.Exit(m.Run())
}

func helper(spec string) int {
	dir := os.Getenv("PB_DIR")
	if spec == "launcher" {
		env := append(os.Environ(), "PB_LAUNCH_HELPER="+os.Getenv("PB_LAUNCH_CHILD"))
		code, _ := Spawn(context.Background(), SpawnOptions{NProc: 2, Argv: []string{os.Args[0]}, Env: env, Grace: 5 * time.Second})
		return code
	}
	rank, _ := strconv.Atoi(os.Getenv("RANK"))
	entries := strings.Split(spec, ",")
	what := entries[rank%len(entries)]
	touch := func(name, content string) {
		_ = os.WriteFile(filepath.Join(dir, name+"."+strconv.Itoa(rank)), []byte(content), 0o644)
	}
	switch {
	case what == "hang":
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		touch("ready", "")
		time.Sleep(60 * time.Second)
		return 0
	case what == "waitsig":
		touch("ready", "")
		time.Sleep(60 * time.Second)
		return 0
	case what == "env":
		e, err := Detect(os.LookupEnv)
		touch("env", fmt.Sprintf("%+v|%v|%s", e, err, os.Getenv("OMPI_COMM_WORLD_RANK")+os.Getenv("PMI_RANK")+os.Getenv("SLURM_PROCID")))
		return 0
	case what == "grand":
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PB_LAUNCH_HELPER=hang", "RANK=0")
		if err := cmd.Start(); err != nil {
			return 99
		}
		touch("grand", strconv.Itoa(cmd.Process.Pid))
		time.Sleep(60 * time.Second)
		return 0
	case what == "say":
		fmt.Printf("hello from %d\npartial %d", rank, rank)
		return 0
	case strings.HasPrefix(what, "kill"):
		s, _ := strconv.Atoi(what[4:])
		_ = syscall.Kill(os.Getpid(), syscall.Signal(s))
		time.Sleep(10 * time.Second)
		return 98
	default:
		code, ms, _ := strings.Cut(what, "@")
		if ms != "" {
			d, _ := strconv.Atoi(ms)
			time.Sleep(time.Duration(d) * time.Millisecond)
		}
		n, _ := strconv.Atoi(code)
		return n
	}
}

// quickExit keeps a race-enabled helper from sleeping a second at exit.
const quickExit = "GORACE=atexit_sleep_ms=0"
