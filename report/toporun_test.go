package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/topologytest"
)

// A preset is shown on its hardware and --save writes the two sections that
// name them; the file is exactly what a config's preset keys read.
func TestShowTopoPresetSaves(t *testing.T) {
	var asked []string
	resolve := func(hw, topo string) (topology.System, error) {
		asked = append(asked, hw+"/"+topo)
		return topologytest.DGXH100(2), nil
	}
	save := filepath.Join(t.TempDir(), "box.toml")
	var out strings.Builder
	err := ShowTopo(&out, "table", "test", TopoRequest{Preset: "dgx-h100x2", Hardware: "h100-sxm", Save: save, Resolve: resolve})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "h100-sxm/dgx-h100x2" {
		t.Errorf("resolver asked %v, want h100-sxm/dgx-h100x2 once", asked)
	}
	if !strings.Contains(out.String(), "dgx-h100x2") {
		t.Errorf("table does not name the preset:\n%s", out.String())
	}
	b, err := os.ReadFile(save)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[hardware]\npreset = \"h100-sxm\"\n\n[topology]\npreset = \"dgx-h100x2\"\n"; string(b) != want {
		t.Errorf("saved %q, want %q", b, want)
	}
}

// No resolver: a preset cannot be shown. A failed discovery returns its
// error as is (the command maps ErrNoGPU to its exit status) and saves nothing.
func TestShowTopoErrors(t *testing.T) {
	var out strings.Builder
	if err := ShowTopo(&out, "table", "test", TopoRequest{Preset: "dgx-h100x2", Hardware: "h100-sxm"}); err == nil || !strings.Contains(err.Error(), "no preset resolver") {
		t.Errorf("no resolver: %v", err)
	}
	save := filepath.Join(t.TempDir(), "box.toml")
	err := ShowTopo(&out, "table", "test", TopoRequest{Save: save, Discover: func() (*topology.Machine, error) { return nil, topology.ErrNoGPU }})
	if !errors.Is(err, topology.ErrNoGPU) {
		t.Errorf("discovery without a GPU: %v, want ErrNoGPU", err)
	}
	if _, serr := os.Stat(save); !os.IsNotExist(serr) {
		t.Errorf("a failed discovery wrote %s (%v)", save, serr)
	}
}
