//go:build cgo && linux && amd64

package dl

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
	"unsafe"
)

// kernelSigaction is struct sigaction as rt_sigaction takes it on amd64.
type kernelSigaction struct {
	handler, flags, restorer, mask uint64
}

const saOnstack = 0x08000000

func rtSigaction(t *testing.T, sig syscall.Signal, act, old *kernelSigaction) {
	t.Helper()
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if e != 0 {
		t.Fatalf("rt_sigaction(%v): %v", sig, e)
	}
}

// A handler whose SA_ONSTACK a C library dropped (here Go's own SIGUSR2
// handler, installed again without it) gets the flag back, and nothing
// else of it changes.
func TestFixSignalStacks(t *testing.T) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR2) // Go installs its handler, with SA_ONSTACK
	defer signal.Reset(syscall.SIGUSR2)

	var goAct kernelSigaction
	rtSigaction(t, syscall.SIGUSR2, nil, &goAct)
	if goAct.flags&saOnstack == 0 {
		t.Fatalf("Go's handler has no SA_ONSTACK: flags %#x", goAct.flags)
	}
	dropped := goAct
	dropped.flags &^= saOnstack
	rtSigaction(t, syscall.SIGUSR2, &dropped, nil)

	if n := FixSignalStacks(); n < 1 {
		t.Errorf("FixSignalStacks changed %d handlers, want at least SIGUSR2's", n)
	}
	var got kernelSigaction
	rtSigaction(t, syscall.SIGUSR2, nil, &got)
	if got != goAct {
		t.Errorf("after the fix %+v, want Go's own %+v", got, goAct)
	}
	if n := FixSignalStacks(); n != 0 {
		t.Errorf("a second pass changed %d handlers, want 0", n)
	}
	// The handler still delivers.
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	if s := <-ch; s != syscall.SIGUSR2 {
		t.Errorf("got %v", s)
	}
}
