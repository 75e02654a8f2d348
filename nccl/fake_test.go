//go:build cgo

package nccl

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/partbench/partbench/cgo/dl"
)

// buildFake compiles testdata/fakenccl.c into dir/libnccl.so.2 with the
// given -D defines. It skips the test when gcc is missing.
func buildFake(t *testing.T, dir string, defines ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("no gcc to build the fake libnccl.so.2: %v", err)
	}
	src, err := filepath.Abs("testdata/fakenccl.c")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "libnccl.so.2")
	args := []string{"-shared", "-fPIC", "-O1", "-Wall", "-o", out, src}
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// loadFake builds a fake and binds it through LoadFrom.
func loadFake(t *testing.T, defines ...string) *Lib {
	t.Helper()
	path := buildFake(t, t.TempDir(), defines...)
	lib, err := dl.Open(path, dl.Now|dl.Local)
	if err != nil {
		t.Fatal(err)
	}
	l, err := LoadFrom(lib)
	if err != nil {
		lib.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// modeID is a unique id whose first byte selects the fake's behaviour
// (see testdata/fakenccl.c) and whose last byte shows the id crossed whole.
func modeID(mode byte) UniqueID {
	var id UniqueID
	id[0], id[127] = mode, 0x5a
	return id
}

const (
	modeFail  = 1
	modeAsync = 2
	modeHang  = 4
)

// hostBuf is n bytes outside the Go heap (an anonymous mapping), so the
// fake may read and write it through a plain address like device memory.
func hostBuf(t *testing.T, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return b
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
