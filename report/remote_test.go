package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// TestRemoteEstimateGrids: the dry-run table prints each mode's bytes as the
// partition counts them, and the gap ratio.
func TestRemoteEstimateGrids(t *testing.T) {
	c, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	link, err := topology.ParseClientLink("--remote-link", "25gbe")
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.PriceRemote(plan, sim.RemoteCompute{PrefillS: 1e-3, DecodeStepS: 1e-4}, sim.RemoteOptions{Link: link})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteGrids(&buf, FormatTable, RemoteEstimateGrids(e, partition.RemoteNaive)...); err != nil {
		t.Fatal(err)
	}
	want, err := plan.RemoteBytesOf(partition.RemoteNaive, partition.RemoteRequest{Phase: partition.Decode, Step: e.DecodeStep}, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"naive *", remoteB(want.Up()), remoteB(want.Down()), "naive/stateful per decode step"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
}
