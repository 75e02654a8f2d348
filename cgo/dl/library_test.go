//go:build cgo

package dl

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenLookupClose(t *testing.T) {
	path := buildFake(t, t.TempDir(), "libpbfake.so.1", "7")
	lib, err := Open(path, Now|Local)
	if err != nil {
		t.Fatal(err)
	}
	if lib.Path() != path {
		t.Errorf("Path() = %q, want %q", lib.Path(), path)
	}
	if got, _ := filepath.EvalSymlinks(lib.File()); got != mustEval(t, path) {
		t.Errorf("File() = %q, want %q", lib.File(), path)
	}
	if p, err := lib.Lookup("pb_fake_which"); err != nil || p == nil {
		t.Errorf("Lookup(pb_fake_which) = %v, %v", p, err)
	}
	_, err = lib.Lookup("pb_no_such_symbol")
	if err == nil || !strings.Contains(err.Error(), "pb_no_such_symbol") || !strings.Contains(err.Error(), path) {
		t.Errorf("Lookup of a missing symbol: err = %v, want it to name the symbol and the library", err)
	}
	if err := lib.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lib.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := lib.Lookup("pb_fake_which"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Lookup after Close: err = %v, want 'closed'", err)
	}
}

func TestOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnothere.so")
	_, err := Open(missing, Now)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(missing) err = %v, want it to name %s", err, missing)
	}
	if _, err := Open("", Now); err == nil {
		t.Error("Open(\"\") succeeded")
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
