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
	a, b, slow := t.TempDir(), t.TempDir(), t.TempDir()
	// Two interpreters sharing a folder: it appears once, in PATH order.
	writeScript(t, a, "python3", `echo /site/a; echo /site/shared`)
	writeScript(t, b, "python", `echo /site/shared; echo; echo /site/b`)
	writeScript(t, slow, "python3", `sleep 5; echo /site/slow`)
	start := time.Now()
	got := askPythons([]string{a, "", filepath.Join(a, "missing"), slow, b}, 200*time.Millisecond)
	want := []string{"/site/a", "/site/shared", "/site/b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("askPythons = %q, want %q", got, want)
	}
	// 200 ms for the slow one plus its wait delay; far below its 5 s sleep.
	if d := time.Since(start); d > 3*time.Second {
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
