package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/sim"
)

// EmulationGrid compares a timeline built from measured compute (one device
// playing every rank) with the pure model.
func EmulationGrid(backend string, emu, model *sim.Estimate, allocated []int64) Grid {
	g := Grid{Title: fmt.Sprintf("Rank emulation: %s, %d ranks played in turn on one %s device", emu.Name, emu.GPUs, backend),
		Header: []string{"metric", "emulated (measured compute, modeled communication)", "modeled (" + model.Hardware + ")", "emulated / modeled"},
		Notes: []string{
			"communication was not executed: every collective and send/recv time is replayed from the topology model",
			"compute times are medians per op over the measured iterations",
			fmt.Sprintf("the modeled column is priced on %s, the emulated one computed by this machine's %s backend (--calibration prices the model on this machine)", model.Hardware, backend),
		}}
	add := func(name string, e, m float64, f func(float64) string) {
		r := "n/a"
		if m != 0 {
			r = strconv.FormatFloat(e/m, 'f', 3, 64)
		}
		g.Rows = append(g.Rows, []string{name, f(e), f(m), r})
	}
	add("TTFT (s)", emu.Prefill.TTFTS, model.Prefill.TTFTS, sec)
	add("TPOT (ms)", emu.Decode.TPOTS, model.Decode.TPOTS, ms)
	add("TPS (tok/s)", emu.Decode.TokensPerS, model.Decode.TokensPerS, num)
	add("prefill bubble (%)", emu.Prefill.BubbleFraction, model.Prefill.BubbleFraction, pct)
	add("decode bubble (%)", emu.Decode.BubbleFraction, model.Decode.BubbleFraction, pct)
	var maxAlloc int64
	for _, a := range allocated {
		maxAlloc = max(maxAlloc, a)
	}
	modelBytes := float64(maxRank(model).TotalBytes)
	unit, scale := "GB", 1e9
	if max(float64(maxAlloc), modelBytes) < 1e8 {
		unit, scale = "MB", 1e6 // a tiny config's memory reads as 0.000 GB
	}
	add("memory per GPU, largest rank ("+unit+")", float64(maxAlloc), modelBytes, func(v float64) string { return strconv.FormatFloat(v/scale, 'f', 3, 64) })
	return g
}

// EmulationSchema names the JSON layout of a rank emulation's results.
const EmulationSchema = "partbench.emulate/v1"

// EmulationDoc is what run --emulate-ranks measured, as results.json holds it.
type EmulationDoc struct {
	Schema         string          `json:"schema"`
	Version        string          `json:"partbench_version"`
	Backend        string          `json:"backend"`
	Config         *configs.Config `json:"config"`
	Ranks          int             `json:"ranks"`
	Emulated       *sim.Estimate   `json:"emulated"`
	Modeled        *sim.Estimate   `json:"modeled"`
	AllocatedBytes []int64         `json:"allocated_bytes"`
	// Measured is the device's own record: per-op and per-step times, the
	// clock, the ops run inside graphs, memory by kind.
	Measured *exec.Emulation `json:"measured,omitempty"`
	Table    Grid            `json:"-"`
}

// WriteEmulationFiles writes results.json and results.csv (the table) of
// an emulation into dir, as a run writes its own.
func WriteEmulationFiles(dir string, d *EmulationDoc) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, "results.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}); err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, "results.csv"), func(w io.Writer) error { return WriteCSV(w, d.Table) })
}
