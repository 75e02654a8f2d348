package launch

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A rank that fails takes the others down with it; the operating system may
// reap a survivor first. The survivors exit ExitPeerFailed, so the verdict
// names the failing rank whatever the order: here rank 1 (peer failed, 5) is
// reaped before rank 2 (its own status 3), and the run's code is 3.
func TestVerdictNamesTheFailingRankNotItsVictims(t *testing.T) {
	exits := []RankExit{
		{Rank: 1, Code: ExitPeerFailed, At: 1 * time.Millisecond},
		{Rank: 2, Code: 3, At: 2 * time.Millisecond},
		{Rank: 0, Code: ExitPeerFailed, At: 3 * time.Millisecond},
	}
	code, err := verdict(exits, nil, nil, nil)
	if code != 3 || err == nil || !strings.Contains(err.Error(), "rank 2 exited with status 3") {
		t.Fatalf("code %d, err %v; want rank 2's status 3", code, err)
	}
	// Only victims: the first of them decides (status 5, rank 1).
	code, err = verdict(exits[:1], nil, nil, nil)
	if code != ExitPeerFailed || err == nil || !strings.Contains(err.Error(), "rank 1") {
		t.Fatalf("victims only: code %d, err %v", code, err)
	}
	// A signal from outside still outranks every status.
	code, _ = verdict(append(exits, RankExit{Rank: 3, Signal: 9, Code: 128 + 9, At: 4 * time.Millisecond}), nil, nil, nil)
	if code != 128+9 {
		t.Fatalf("signal: code %d, want 137", code)
	}
}

// A rank the launcher had to kill while the others only lost a peer is the
// frozen one, and the verdict names it; after an interrupt or beside a real
// failure it is not.
func TestVerdictNamesTheFrozenRank(t *testing.T) {
	exits := []RankExit{
		{Rank: 2, Code: ExitPeerFailed, At: 1 * time.Millisecond},
		{Rank: 0, Code: ExitPeerFailed, At: 2 * time.Millisecond},
		{Rank: 1, Code: 128 + 9, Signal: 9, Killed: true, At: 3 * time.Millisecond},
	}
	code, err := verdict(slices.Clone(exits), nil, nil, nil)
	var se *SpawnError
	if code != ExitPeerFailed || !errors.As(err, &se) || !se.Frozen || se.First.Rank != 1 || se.Victim.Rank != 2 {
		t.Fatalf("code %d, err %v; want rank 1 named frozen, rank 2 its first victim", code, err)
	}
	if !strings.HasPrefix(err.Error(), "launch: rank 1 stopped responding") {
		t.Errorf("error %q", err)
	}
	_, err = verdict(slices.Clone(exits), syscall.SIGINT, nil, nil)
	if errors.As(err, &se) && se.Frozen {
		t.Errorf("after an interrupt: %v names a frozen rank", err)
	}
	_, err = verdict(append(slices.Clone(exits), RankExit{Rank: 3, Code: 2, At: 4 * time.Millisecond}), nil, nil, nil)
	if !errors.As(err, &se) || se.Frozen || se.First.Rank != 3 {
		t.Errorf("beside a failing rank 3: %v", err)
	}
}
