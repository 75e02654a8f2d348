package report

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/partbench/partbench/claims"
)

// ClaimsSchema names the JSON layout of `partbench claims`.
const ClaimsSchema = "partbench.claims/v1"

// ClaimsGrid lays out judged claims.
func ClaimsGrid(title string, js []claims.Judgement) Grid {
	g := Grid{Title: title, Wrap: 48, Header: []string{"line", "metric", "strategy", "config", "claimed", "unit", "model", "bound", "claimed/model", "verdict", "why"}}
	for _, j := range js {
		bound := ""
		if j.BoundKind != "" {
			bound = j.BoundKind + " " + strconv.FormatFloat(j.Bound, 'g', 4, 64)
		}
		g.Rows = append(g.Rows, []string{itoa(j.Line), j.Metric, j.Strategy, j.Config, strconv.FormatFloat(j.Value, 'g', 4, 64), j.Unit,
			strconv.FormatFloat(j.Model, 'g', 4, 64), bound, strconv.FormatFloat(j.Ratio, 'g', 3, 64), j.Verdict, j.Detail})
	}
	return g
}

// ClaimsJSON writes judged claims.
func ClaimsJSON(w io.Writer, version, title, source string, js []claims.Judgement) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema     string             `json:"schema"`
		Version    string             `json:"partbench_version"`
		Title      string             `json:"title"`
		Source     string             `json:"source"`
		Judgements []claims.Judgement `json:"judgements"`
	}{ClaimsSchema, version, title, source, js})
}

// Claims writes judgements in format: json (with partbench's version, the
// file's title and source), csv, or a grid (table, markdown).
func Claims(w io.Writer, format, version, title, source string, js []claims.Judgement) error {
	switch format {
	case FormatJSON:
		return ClaimsJSON(w, version, title, source, js)
	case FormatCSV:
		return WriteCSV(w, ClaimsGrid("", js))
	}
	return WriteGrids(w, format, ClaimsGrid(title, js))
}
