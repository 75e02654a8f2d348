package wire

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
)

// TestModeTableCoversWire: every remotepb.Mode value but MODE_UNSPECIFIED
// is a row of partition's mode table whose name is the enum's (MODE_KV is
// kv), every row is a value of the enum, and the wire mapping round-trips;
// only served modes open a server session.
func TestModeTableCoversWire(t *testing.T) {
	for n, name := range pb.Mode_name {
		r, ok := partition.RemoteModeOfWire(n)
		if n == int32(pb.Mode_MODE_UNSPECIFIED) {
			if ok {
				t.Errorf("%s has a row: %+v", name, r)
			}
			continue
		}
		if !ok {
			t.Errorf("%s (%d) has no row in partition's mode table", name, n)
			continue
		}
		if want := strings.ToLower(strings.TrimPrefix(name, "MODE_")); string(r.Mode) != want {
			t.Errorf("%s (%d) is row %s, want %s", name, n, r.Mode, want)
		}
		if got := PBMode(r.Mode); got != pb.Mode(n) {
			t.Errorf("PBMode(%s) = %v, want %v", r.Mode, got, pb.Mode(n))
		}
		m, err := ModeOf(pb.Mode(n))
		if r.Served && (err != nil || m != r.Mode) {
			t.Errorf("ModeOf(%s) = %q, %v; want %s", name, m, err, r.Mode)
		}
		if !r.Served && err == nil {
			t.Errorf("ModeOf(%s) = %q; an unserved mode must be refused", name, m)
		}
	}
	for _, r := range partition.RemoteModeRows() {
		if _, ok := pb.Mode_name[r.Wire]; !ok {
			t.Errorf("row %s: wire %d is not a remotepb.Mode", r.Mode, r.Wire)
		}
	}
	_, err := ModeOf(pb.Mode_MODE_UNSPECIFIED)
	if want := "a server session is naive, kv or stateful (local runs in the client)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ModeOf(unspecified) = %v, want it to say %q", err, want)
	}
}
