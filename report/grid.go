package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Grid is a titled table of strings: the form every report takes before it
// is written as a terminal table, Markdown or CSV.
type Grid struct {
	Title  string
	Header []string
	Rows   [][]string
	Notes  []string
	// Wrap, when positive, wraps terminal cells wider than this many columns.
	Wrap int
}

// Formats accepted by the writers.
const (
	FormatTable    = "table"
	FormatMarkdown = "markdown"
	FormatCSV      = "csv"
	FormatJSON     = "json"
)

// CheckFormat rejects an unknown --format value, naming the allowed ones.
func CheckFormat(f string, allowed ...string) error {
	for _, a := range allowed {
		if f == a {
			return nil
		}
	}
	return fmt.Errorf("--format: must be one of %s (got %q)", strings.Join(allowed, ", "), f)
}

// WriteGrids writes grids as terminal tables or Markdown, each under its title.
func WriteGrids(w io.Writer, format string, grids ...Grid) error {
	fw, fitted := w.(Fitted)
	for i, g := range grids {
		if fitted && fw.Cols > 0 && format == FormatTable {
			g = fit(g, fw.Cols)
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		if g.Title != "" {
			if format == FormatMarkdown {
				fmt.Fprintf(w, "### %s\n\n", g.Title)
			} else {
				fmt.Fprintln(w, g.Title)
			}
		}
		opts := []tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithRowAutoWrap(tw.WrapNone)}
		if g.Wrap > 0 && format != FormatMarkdown {
			opts = append(opts, tablewriter.WithRowAutoWrap(tw.WrapNormal), tablewriter.WithRowMaxWidth(g.Wrap))
		}
		if format == FormatMarkdown {
			opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
		}
		t := tablewriter.NewTable(w, opts...)
		t.Header(anys(g.Header)...)
		for _, r := range g.Rows {
			if err := t.Append(anys(r)...); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		for _, n := range g.Notes {
			if format == FormatMarkdown {
				fmt.Fprintf(w, "\n- %s", n)
			} else {
				fmt.Fprintf(w, "  * %s\n", n)
			}
		}
		if format == FormatMarkdown && len(g.Notes) > 0 {
			fmt.Fprintln(w)
		}
	}
	return nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// WriteCSV writes one grid as CSV (header first).
func WriteCSV(w io.Writer, g Grid) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(g.Header); err != nil {
		return err
	}
	if err := cw.WriteAll(g.Rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// WriteGrid writes one grid in any format a grid has: table, markdown, csv,
// latex.
func WriteGrid(w io.Writer, format string, g Grid) error {
	switch format {
	case FormatLaTeX:
		return WriteLaTeX(w, g)
	case FormatCSV:
		return WriteCSV(w, g)
	}
	return WriteGrids(w, format, g)
}

// TablesSchema is the schema of the JSON form of plain tables (commands
// whose result has no richer document of its own).
const TablesSchema = "partbench.tables/v1"

// tablesDoc is the JSON form of grids.
type tablesDoc struct {
	Schema  string      `json:"schema"`
	Version string      `json:"version,omitempty"`
	Command string      `json:"command"`
	Tables  []tableJSON `json:"tables"`
}

type tableJSON struct {
	Title  string     `json:"title,omitempty"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
	Notes  []string   `json:"notes,omitempty"`
}

// WriteTables writes grids in any table format: table and markdown (titled,
// with notes), csv (one block per grid, a blank line between, notes left
// out), json (partbench.tables/v1, command naming what printed them) and
// latex.
func WriteTables(w io.Writer, format, command, version string, grids ...Grid) error {
	switch format {
	case FormatJSON:
		d := tablesDoc{Schema: TablesSchema, Version: version, Command: command, Tables: []tableJSON{}}
		for _, g := range grids {
			rows := g.Rows
			if rows == nil {
				rows = [][]string{}
			}
			d.Tables = append(d.Tables, tableJSON{Title: g.Title, Header: g.Header, Rows: rows, Notes: g.Notes})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	case FormatCSV:
		for i, g := range grids {
			if i > 0 {
				fmt.Fprintln(w)
			}
			if err := WriteCSV(w, g); err != nil {
				return err
			}
		}
		return nil
	case FormatLaTeX:
		return WriteLaTeX(w, grids...)
	}
	return WriteGrids(w, format, grids...)
}

// ToOutput runs write on the file path (atomically) or, when path is "",
// on stdout: what every --output flag does.
func ToOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	if err := WriteFileAtomic(path, write); err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	return nil
}
