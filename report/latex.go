package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// FormatLaTeX writes grids as LaTeX tables with booktabs rules.
const FormatLaTeX = "latex"

// latexReplacer escapes LaTeX's special characters and spells out the few
// non-ASCII symbols partbench's headers use, so the output compiles with
// pdflatex and only the booktabs package.
var latexReplacer = strings.NewReplacer(
	`\`, `\textbackslash{}`,
	`_`, `\_`,
	`%`, `\%`,
	`&`, `\&`,
	`#`, `\#`,
	`$`, `\$`,
	`{`, `\{`,
	`}`, `\}`,
	`~`, `\textasciitilde{}`,
	`^`, `\textasciicircum{}`,
	`µ`, `\textmu{}`,
	`μ`, `\textmu{}`,
	`Δ`, `$\Delta$`,
	`×`, `$\times$`,
	`≤`, `$\leq$`,
	`≥`, `$\geq$`,
	`→`, `$\rightarrow$`,
	`−`, `$-$`,
	`—`, `---`,
	`–`, `--`,
	`◀`, `$\blacktriangleleft$`,
)

// LaTeXEscape escapes text for a LaTeX table cell.
func LaTeXEscape(s string) string { return latexReplacer.Replace(s) }

// WriteLaTeX writes each grid as a table environment holding a booktabs
// tabular (\toprule, \midrule, \bottomrule); numeric columns are right
// aligned, notes follow the tabular in small type. Needs \usepackage{booktabs}.
func WriteLaTeX(w io.Writer, grids ...Grid) error {
	for i, g := range grids {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var b strings.Builder
		b.WriteString("\\begin{table}[htbp]\n\\centering\n")
		if g.Title != "" {
			fmt.Fprintf(&b, "\\caption{%s}\n", LaTeXEscape(g.Title))
		}
		fmt.Fprintf(&b, "\\begin{tabular}{%s}\n\\toprule\n", columnSpec(g))
		b.WriteString(latexRow(g.Header))
		b.WriteString("\\midrule\n")
		for _, r := range g.Rows {
			b.WriteString(latexRow(r))
		}
		b.WriteString("\\bottomrule\n\\end{tabular}\n")
		if len(g.Notes) > 0 {
			b.WriteString("\n\\par\\smallskip\\footnotesize\n")
			for _, n := range g.Notes {
				fmt.Fprintf(&b, "%s\\\\\n", LaTeXEscape(n))
			}
		}
		b.WriteString("\\end{table}\n")
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

func latexRow(cells []string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = LaTeXEscape(c)
	}
	return strings.Join(esc, " & ") + " \\\\\n"
}

// columnSpec right-aligns columns whose every non-empty cell is a number.
func columnSpec(g Grid) string {
	var b strings.Builder
	for c := range g.Header {
		numeric, any := true, false
		for _, r := range g.Rows {
			if c >= len(r) || r[c] == "" || r[c] == "—" || r[c] == "n/a" {
				continue
			}
			any = true
			if _, err := strconv.ParseFloat(strings.TrimPrefix(r[c], "+"), 64); err != nil {
				numeric = false
			}
		}
		if numeric && any {
			b.WriteByte('r')
		} else {
			b.WriteByte('l')
		}
	}
	return b.String()
}
