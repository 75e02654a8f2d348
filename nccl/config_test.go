//go:build cgo

package nccl

import (
	"context"
	"testing"
	"time"
)

// The fake checks size, magic and version and echoes every field it read
// from the config, so this proves the struct's layout as the library sees it.
func TestInitRankConfig(t *testing.T) {
	l := loadFake(t)
	setupRan := false
	c, err := l.CommInitRank(8, modeID(0), 3,
		WithConfig(Config{CGAClusterSize: 4, MinCTAs: 2, MaxCTAs: 16, NetName: "IB"}),
		WithThreadSetup(func() error { setupRan = true; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	if !setupRan {
		t.Error("thread setup did not run")
	}
	// blocking unset = NCCL_CONFIG_UNDEF_INT = INT_MIN.
	want := "ncclCommInitRankConfig(nranks=8, rank=3, size=40, version=21700, blocking=-2147483648, " +
		"cgaClusterSize=4, minCTAs=2, maxCTAs=16, netName=IB)"
	if got := c.LastError(); got != want {
		t.Errorf("fake saw %q\nwant      %q", got, want)
	}
}

// A non-blocking init returns ncclInProgress; the fake is ready after two
// more polls, which CommInitRank waits for.
func TestNonBlockingInit(t *testing.T) {
	l := loadFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := l.CommInitRank(2, modeID(0), 0, WithConfig(Config{NonBlocking: true}), WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	if err := c.Wait(ctx); err != nil {
		t.Errorf("Wait on a ready comm: %v", err)
	}
	if err := c.AllReduce(0, 0, 0, Float32, Sum, 0); err != nil {
		t.Errorf("AllReduce on a ready non-blocking comm: %v", err)
	}
}
