package report

import (
	"fmt"
	"io"
	"math"
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
// aligned with numbers to 4 significant figures (powers of ten as
// $2.992\times10^{10}$, negatives with a true minus), a tabular wider than
// the text shrinks to \linewidth, notes follow in small type. Needs
// \usepackage{booktabs,graphicx}.
func WriteLaTeX(w io.Writer, grids ...Grid) error {
	fmt.Fprintln(w, "% partbench table: needs \\usepackage{booktabs,graphicx}")
	for i, g := range grids {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var b strings.Builder
		b.WriteString("\\begin{table}[htbp]\n\\centering\n")
		if g.Title != "" {
			fmt.Fprintf(&b, "\\caption{%s}\n", LaTeXEscape(g.Title))
		}
		spec := columnSpec(g)
		b.WriteString("\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n")
		fmt.Fprintf(&b, "\\begin{tabular}{%s}\n\\toprule\n", spec)
		b.WriteString(latexRow(g.Header, ""))
		b.WriteString("\\midrule\n")
		for _, r := range g.Rows {
			b.WriteString(latexRow(r, spec))
		}
		b.WriteString("\\bottomrule\n\\end{tabular}}\n")
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

// latexRow escapes a row; cells of right-aligned (numeric) columns in spec
// are typeset as numbers.
func latexRow(cells []string, spec string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		if i < len(spec) && spec[i] == 'r' {
			if n, ok := LaTeXNumber(c); ok {
				esc[i] = n
				continue
			}
		}
		esc[i] = LaTeXEscape(c)
	}
	return strings.Join(esc, " & ") + " \\\\\n"
}

// LaTeXNumber typesets a numeric cell: integers below 10^6 as written, other
// values to 4 significant figures, powers of ten outside [10^-3, 10^6) as
// $m\times10^{e}$, and a sign as a true minus or plus in math mode.
func LaTeXNumber(s string) (string, bool) {
	v, err := strconv.ParseFloat(strings.TrimPrefix(s, "+"), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return "", false
	}
	sign := ""
	switch {
	case v < 0:
		sign, v = "-", -v
	case strings.HasPrefix(s, "+"):
		sign = "+"
	}
	var body string
	switch {
	case v == math.Trunc(v) && v < 1e6:
		body = strconv.FormatFloat(v, 'f', -1, 64)
		if strings.Contains(s, ".") { // keep the writer's decimals (a percentage "0.00")
			body = strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
		}
	case v != 0 && (v < 1e-3 || v >= 1e6):
		e := int(math.Floor(math.Log10(v)))
		m := v / math.Pow(10, float64(e))
		if m >= 9.9995 { // rounds up to 10.00
			m, e = m/10, e+1
		}
		return fmt.Sprintf("$%s%s\\times10^{%d}$", sign, strconv.FormatFloat(m, 'f', 3, 64), e), true
	default:
		body = strconv.FormatFloat(v, 'f', max(0, 3-int(math.Floor(math.Log10(v)))), 64)
	}
	if sign == "" {
		return body, true
	}
	return "$" + sign + "$" + body, true
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
