package dl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestAskPythons(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	// Two interpreters sharing a folder: it appears once, in PATH order.
	// Their timeout is generous: a busy machine may take seconds to start
	// a shell, and these fakes must answer, not race a clock.
	writeScript(t, a, "python3", `echo /site/a; echo /site/shared`)
	writeScript(t, b, "python", `echo /site/shared; echo; echo /site/b`)
	got := askPythons([]string{a, "", filepath.Join(a, "missing"), b}, time.Minute)
	want := []string{"/site/a", "/site/shared", "/site/b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("askPythons = %q, want %q", got, want)
	}
}

// An interpreter that hangs is skipped after the timeout, even when its
// child holds standard output open (WaitDelay), long before it would answer.
func TestAskPythonsSkipsAHang(t *testing.T) {
	slow := t.TempDir()
	writeScript(t, slow, "python3", `sleep 20; echo /site/slow`)
	start := time.Now()
	if got := askPythons([]string{slow}, 200*time.Millisecond); got != nil {
		t.Errorf("askPythons = %q from an interpreter that answers after 20 s, want nothing", got)
	}
	// 200 ms plus the same wait delay, and however long the machine takes
	// to start the shell; the bound only proves the 20 s sleep was cut.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a hanging interpreter held the search for %v", d)
	}
}

func TestSpecs(t *testing.T) {
	for _, s := range []Spec{NCCL(), CUDA(), CUBLAS(), NVRTC()} {
		if s.Name == "" || len(s.Sonames) == 0 || !strings.HasPrefix(s.EnvVar, "PARTBENCH_") {
			t.Errorf("incomplete spec %+v", s)
		}
		for _, so := range s.Sonames {
			if !strings.HasPrefix(so, "lib") || !strings.Contains(so, ".so.") {
				t.Errorf("%s: soname %q is not versioned", s.Name, so)
			}
		}
	}
}
