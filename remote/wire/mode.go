package wire

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
)

// ModeOf reads a wire mode through partition's mode table; only served
// modes open a server session.
func ModeOf(m pb.Mode) (partition.RemoteMode, error) {
	if r, ok := partition.RemoteModeOfWire(int32(m)); ok && r.Served {
		return r.Mode, nil
	}
	return "", status.Errorf(codes.InvalidArgument, "open: mode %v: a server session is %s (local runs in the client)", m, servedModes())
}

// servedModes names the served modes as "a, b or c".
func servedModes() string {
	var names []string
	for _, r := range partition.RemoteModeRows() {
		if r.Served {
			names = append(names, string(r.Mode))
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// PBMode is the mode's wire enum from the mode table (unspecified for a
// name not in it).
func PBMode(m partition.RemoteMode) pb.Mode {
	r, _ := m.Row()
	return pb.Mode(r.Wire)
}
