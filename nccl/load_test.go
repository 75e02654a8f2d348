//go:build cgo

package nccl

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/dl"
)

func TestLoadFromEnvOverride(t *testing.T) {
	path := buildFake(t, t.TempDir())
	t.Setenv("PARTBENCH_NCCL_LIB", path)
	l, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Path() != path {
		t.Errorf("loaded %s, want %s", l.Path(), path)
	}
	if v, err := l.Version(); err != nil || v.Code != 22703 {
		t.Errorf("Version() = %+v, %v; want code 22703", v, err)
	}
}

func TestLoadFromLibraryPathSearch(t *testing.T) {
	dir := t.TempDir()
	path := buildFake(t, dir)
	env := map[string]string{"LD_LIBRARY_PATH": filepath.Join(dir, "missing") + ":" + dir}
	s := dl.Searcher{Getenv: func(k string) string { return env[k] }, PythonDirs: func() []string { return nil }}
	lib, err := s.Find(dl.NCCL())
	if err != nil {
		t.Fatal(err)
	}
	l, err := LoadFrom(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Path() != path {
		t.Errorf("loaded %s, want %s", l.Path(), path)
	}
}

func TestLoadMissingMandatorySymbols(t *testing.T) {
	path := buildFake(t, t.TempDir(), "FAKE_NO_COLLECTIVES")
	lib, err := dl.Open(path, dl.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	_, err = LoadFrom(lib)
	if err == nil {
		t.Fatal("LoadFrom accepted a library without ncclAllReduce and ncclSend")
	}
	for _, want := range []string{"ncclAllReduce", "ncclSend", path} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	// Optional symbols are not reported missing.
	if strings.Contains(err.Error(), "ncclGetLastError") || strings.Contains(err.Error(), "ncclCommInitRankConfig") {
		t.Errorf("error %q names an optional symbol", err)
	}
}

func TestVersions(t *testing.T) {
	cases := []struct {
		defines    []string
		want       Version
		initConfig bool
	}{
		// 22703 = 2·10000 + 27·100 + 3 (encoding since 2.9).
		{nil, Version{2, 27, 3, 22703}, true},
		// 2708 = 2·1000 + 7·100 + 8 (encoding before 2.9); no optional symbols.
		{[]string{"FAKE_OLD"}, Version{2, 7, 8, 2708}, false},
	}
	for _, c := range cases {
		l := loadFake(t, c.defines...)
		v, err := l.Version()
		if err != nil || v != c.want {
			t.Errorf("%v: Version() = %+v, %v; want %+v", c.defines, v, err, c.want)
		}
		if l.HasInitConfig() != c.initConfig {
			t.Errorf("%v: HasInitConfig() = %v", c.defines, l.HasInitConfig())
		}
	}
}

func TestUniqueIDAndInit(t *testing.T) {
	l := loadFake(t)
	id, err := l.GetUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range id {
		if b != byte(i*7+3) {
			t.Fatalf("id[%d] = %d, want %d (the fake's pattern)", i, b, byte(i*7+3))
		}
	}
	c, err := l.CommInitRank(4, modeID(0), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	// The fake echoes the first and last byte of the id it got by value.
	if got, want := c.LastError(), "ncclCommInitRank(nranks=4, rank=2, id[0]=0, id[127]=90)"; got != want {
		t.Errorf("fake saw %q, want %q", got, want)
	}
	if n, err := c.Count(); n != 4 || err != nil {
		t.Errorf("Count() = %d, %v", n, err)
	}
	if r, err := c.UserRank(); r != 2 || err != nil {
		t.Errorf("UserRank() = %d, %v", r, err)
	}
	if _, err := l.CommInitRank(4, id, 4); err == nil {
		t.Error("rank 4 of 4 accepted")
	}
	if _, err := l.CommInitRank(2, id, 0, WithGlobalRanks([]int{3, 3})); err == nil {
		t.Error("repeated global ranks accepted")
	}
	if err := c.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := c.AllReduce(0, 0, 1, Float32, Sum, 0); !errors.Is(err, ErrDestroyed) {
		t.Errorf("AllReduce after Destroy: err = %v, want ErrDestroyed", err)
	}
}

func TestLibCloseTwice(t *testing.T) {
	l := loadFake(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
