package report

import "io"

// Topo writes v in format: json (TopoJSON), dot (TopoDOT, the link graph),
// table (TopoTable, nvidia-smi's matrix), else the grids of TopoGrids
// through WriteTables with version.
func Topo(w io.Writer, format, version string, v TopoView) error {
	switch format {
	case FormatJSON:
		return TopoJSON(w, v)
	case "dot":
		return TopoDOT(w, v.Graph)
	case FormatTable:
		return TopoTable(w, v)
	}
	return WriteTables(w, format, "topo", version, TopoGrids(v)...)
}
