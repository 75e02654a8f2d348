package report

import (
	"fmt"
	"io"
)

// WriteEmulation lays out an emulation (d's figures; notes added to its
// table), writes its results files into dir when dir is not "" (an error
// names --output-dir), and prints the table in format.
func WriteEmulation(w io.Writer, format, dir string, d *EmulationDoc, notes []string) error {
	d.Schema, d.Table = EmulationSchema, EmulationGrid(d.Backend, d.Emulated, d.Modeled, d.AllocatedBytes)
	d.Table.Notes = append(d.Table.Notes, notes...)
	if dir != "" {
		if err := WriteEmulationFiles(dir, d); err != nil {
			return fmt.Errorf("--output-dir: %w", err)
		}
	}
	return WriteTables(w, format, "run --emulate-ranks", d.Version, d.Table)
}
