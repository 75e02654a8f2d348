package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// ProfileDirEnv names a folder where every partbench process — the
// command, and each rank or server it starts, which inherit it — writes a
// CPU profile of its whole run, as COMMAND-PID.pprof (`go tool pprof
// partbench FILE`): where a run's or a server's time goes on the host,
// for the performance engineer who would otherwise attach perf.
const ProfileDirEnv = "PARTBENCH_PROFILE_DIR"

// startProfile starts the CPU profile ProfileDirEnv asks for and returns
// what stops it (a no-op without the variable); command names the file. A folder that cannot be
// made or written is an error naming the variable.
func startProfile(command string, stderr io.Writer) (stop func(), err error) {
	dir := os.Getenv(ProfileDirEnv)
	if dir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s=%s: %w", ProfileDirEnv, dir, err)
	}
	name := command
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", filepath.Base(name), os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ProfileDirEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %s: %w", ProfileDirEnv, path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "partbench: %s: %s: %v\n", ProfileDirEnv, path, err)
		}
	}, nil
}
