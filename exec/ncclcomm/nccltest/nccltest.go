// Package nccltest builds a stand-in for libnccl.so.2 for tests of
// exec/ncclcomm and its users: nccl/testdata/fakenccl.c (host-memory
// collectives, a trace of each call's arguments, failure modes chosen by
// byte 0 of the unique id) with exec/ncclcomm/testdata/fakenccl_ids.c's
// ncclGetUniqueId, which makes a new id per call whose mode byte is
// $PARTBENCH_FAKE_NCCL_MODE. It needs gcc and the repository's sources.
//
// It must not be imported by non-test code.
package nccltest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// ModeEnv is the variable whose decimal value becomes byte 0 of every
// unique id the fake makes: 0 (unset) healthy, 1 every call fails with
// ncclSystemError, 2 an asynchronous ncclRemoteError from the third poll
// on, 4 collectives and point-to-point calls block until ncclCommAbort
// (at most 10 s); bits combine.
const ModeEnv = "PARTBENCH_FAKE_NCCL_MODE"

// Fake behaviours (bits of ModeEnv's value).
const (
	ModeFail  = 1
	ModeAsync = 2
	ModeHang  = 4
)

var (
	mu    sync.Mutex
	built = map[string][]byte{}
)

// Build compiles the fake with the given -D defines (FAKE_OLD: NCCL 2.7.8
// without ncclCommInitRankConfig and ncclGetLastError) into a new
// temporary folder and returns the path of its libnccl.so.2. Each set of
// defines is compiled once per process. It skips the test when gcc is
// missing.
func Build(t testing.TB, defines ...string) string {
	t.Helper()
	so, err := compiled(defines)
	if errors.Is(err, exec.ErrNotFound) {
		t.Skipf("no gcc to build the fake libnccl.so.2: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "libnccl.so.2")
	if err := os.WriteFile(path, so, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Setenv builds the fake and points partbench's NCCL search at it
// (PARTBENCH_NCCL_LIB) for the test's duration.
func Setenv(t testing.TB, defines ...string) string {
	t.Helper()
	path := Build(t, defines...)
	t.Setenv("PARTBENCH_NCCL_LIB", path)
	return path
}

func compiled(defines []string) ([]byte, error) {
	key := strings.Join(defines, " ")
	mu.Lock()
	defer mu.Unlock()
	if b, ok := built[key]; ok {
		return b, nil
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return nil, err
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("nccltest: cannot locate the fake's sources")
	}
	repo := filepath.Join(filepath.Dir(self), "..", "..", "..")
	src := filepath.Join(repo, "exec", "ncclcomm", "testdata", "fakenccl_ids.c")
	inc := filepath.Join(repo, "nccl", "testdata")
	dir, err := os.MkdirTemp("", "nccltest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	so := filepath.Join(dir, "libnccl.so.2")
	args := []string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I", inc, "-o", so, src}
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gcc %v: %v\n%s", args, err, out)
	}
	b, err := os.ReadFile(so)
	if err != nil {
		return nil, err
	}
	built[key] = b
	return b, nil
}
