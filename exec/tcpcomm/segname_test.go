package tcpcomm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/exec/shmcomm"
)

// testJobID is the job id the test worlds' rendezvous sessions carry.
var testJobID string

// TestSegmentNamesCarryTheJob: a pair's segment is named after the job (the
// rendezvous session's job id), the two ranks and the creator's process;
// both sides see the same name, and the file is gone from the directory
// once New returns (unlinked after the opener mapped it).
func TestSegmentNamesCarryTheJob(t *testing.T) {
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	for _, tc := range []struct{ job, want string }{
		{"pb-0123456789ab", "pb-0123456789ab"},
		{"prterun-host-42@1/x", "prterun-host-42_1_x"}, // an Open MPI namespace: '@' and '/' are replaced
		{"", "nojob"},
	} {
		testJobID = tc.job
		dir := t.TempDir()
		cs := worldWith(t, 3, func(int) Options { return Options{ListenHost: "127.0.0.1", Transport: TransportSHM, ShmDir: dir} })
		testJobID = ""
		for r, c := range cs {
			for q, p := range c.peers {
				if q == r {
					continue
				}
				lo, hi := min(r, q), max(r, q)
				prefix := fmt.Sprintf("partbench-%s-r%d-r%d-p%d-", tc.want, lo, hi, os.Getpid())
				if name := filepath.Base(p.seg.Path()); !strings.HasPrefix(name, prefix) || filepath.Dir(p.seg.Path()) != dir {
					t.Errorf("job %q: rank %d's segment with rank %d is %s, want %s/%s…", tc.job, r, q, p.seg.Path(), dir, prefix)
				}
				if p.seg.Path() != cs[q].peers[r].seg.Path() {
					t.Errorf("ranks %d and %d name their segment %s and %s", r, q, p.seg.Path(), cs[q].peers[r].seg.Path())
				}
			}
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("job %q: after set-up the segment directory holds %v (%v), want nothing", tc.job, ents, err)
		}
	}
	if long := segmentName(strings.Repeat("j", 100), 0, 1, [shmcomm.TokenBytes]byte{}); !strings.HasPrefix(long, "partbench-"+strings.Repeat("j", 64)+"-r0-r1-") {
		t.Errorf("a 100-character job id gives %s, want it cut to 64", long)
	}
}
