package report

import "io"

// WriteRun prints a measured run in format: the whole document as JSON, its
// comparison rows as CSV, else its tables (with one row per rank when
// perRank).
func WriteRun(w io.Writer, format string, d *RunDoc, perRank bool) error {
	switch format {
	case FormatJSON:
		return RunJSON(w, d)
	case FormatCSV:
		return RunCSV(w, d)
	}
	return WriteGrids(w, format, RunGrids(d, perRank)...)
}

// WriteRunFiles writes results.json and results.csv into dir ("" = none);
// when that fails, the results go to stdout as JSON (unless printedJSON says
// they were printed so already) and the error says so.
func WriteRunFiles(dir string, d *RunDoc, stdout io.Writer, printedJSON bool) error {
	asJSON := func(w io.Writer) error { return RunJSON(w, d) }
	fallback := asJSON
	if printedJSON {
		fallback = nil
	}
	return WriteOutFiles(dir, []OutFile{
		{Name: "results.json", Write: asJSON},
		{Name: "results.csv", Write: func(w io.Writer) error { return RunCSV(w, d) }},
	}, stdout, fallback)
}
