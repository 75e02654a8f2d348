package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// Fitted is a writer whose terminal tables must fit Cols columns: a table
// wider than that drops its rightmost columns (the first column, the row's
// name, stays) and says which in a note. `--wide` is not wrapping stdout.
type Fitted struct {
	io.Writer
	Cols int
}

// tableWidth is the width tablewriter's box layout gives g: each column's
// widest cell plus one space each side and a rule, and the closing rule.
func tableWidth(g Grid, n int) int {
	w := 1
	for c := 0; c < n; c++ {
		cw := 0
		for _, row := range append([][]string{g.Header}, g.Rows...) {
			if c < len(row) {
				cw = max(cw, runewidth.StringWidth(row[c]))
			}
		}
		w += cw + 3
	}
	return w
}

// fit drops g's rightmost columns until it fits cols, noting the dropped.
func fit(g Grid, cols int) Grid {
	n := len(g.Header)
	for n > 1 && tableWidth(g, n) > cols {
		n--
	}
	if n == len(g.Header) {
		return g
	}
	out := g
	out.Header = g.Header[:n]
	out.Rows = make([][]string, len(g.Rows))
	for i, r := range g.Rows {
		out.Rows[i] = r[:min(n, len(r))]
	}
	out.Notes = append(append([]string{}, g.Notes...),
		fmt.Sprintf("%d more columns (%s) do not fit %d columns: --wide shows all, --format csv or json has them too", len(g.Header)-n, strings.Join(g.Header[n:], ", "), cols))
	return out
}
