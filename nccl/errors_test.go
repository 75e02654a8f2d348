//go:build cgo

package nccl

import (
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
)

func TestCallErrors(t *testing.T) {
	l := loadFake(t)
	c, err := l.CommInitRank(4, modeID(modeFail), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	buf := hostBuf(t, 64)
	err = c.AllReduce(addr(buf), addr(buf), 16, Float32, Sum, 0)
	want := "nccl: ncclAllReduce: ncclSystemError (2): a system call or the network failed; " +
		"last error: fake: ncclAllReduce: socket to rank 3 closed"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
	var r Result
	if !errors.Is(err, SystemError) || !errors.As(err, &r) || r != SystemError {
		t.Errorf("err does not wrap SystemError: %v", err)
	}
	if got := c.Counter().Snapshot().TotalCalls(); got != 0 {
		t.Errorf("a failed call was counted: %d calls", got)
	}
	if got := l.ErrorString(SystemError); got != "fake error string 2" {
		t.Errorf("ErrorString = %q", got)
	}
}

// Without ncclGetLastError (NCCL < 2.13) the error carries the Result alone.
func TestCallErrorsWithoutLastError(t *testing.T) {
	l := loadFake(t, "FAKE_OLD")
	c, err := l.CommInitRank(2, modeID(modeFail), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	err = c.Broadcast(0, 0, 0, Int8, 0, 0)
	if want := "nccl: ncclBroadcast: ncclSystemError (2): a system call or the network failed"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	if _, err := l.CommInitRank(2, modeID(0), 0, WithConfig(Config{NonBlocking: true})); err == nil ||
		!strings.Contains(err.Error(), "ncclCommInitRankConfig") {
		t.Errorf("WithConfig on NCCL 2.7: err = %v, want it to name ncclCommInitRankConfig", err)
	}
}

func TestArgumentChecks(t *testing.T) {
	l := loadFake(t)
	c, err := l.CommInitRank(2, modeID(0), 0, WithCounter(commcount.New()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	for name, err := range map[string]error{
		"negative count": c.AllReduce(0, 0, -1, Float32, Sum, 0),
		"unknown type":   c.AllGather(0, 0, 1, DataType(42), 0),
		"peer outside":   c.Send(0, 1, Int8, 2, 0),
		"root outside":   c.Broadcast(0, 0, 1, Int8, -1, 0),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if c.Counter().Snapshot().TotalCalls() != 0 {
		t.Error("rejected calls were counted")
	}
}
