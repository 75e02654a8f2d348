package topology

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TOMLWriter writes the hardware and topology profiles partbench produces
// (a calibration, a discovered machine) in the schema configs reads: tables,
// keys and comments. It is the one TOML writer: every value goes through
// TOMLValue, so a float always reads back as the same float.
type TOMLWriter struct {
	b strings.Builder
	// CommentColumn pads "key = value" to this width before a trailing
	// comment; 0 puts two spaces between them.
	CommentColumn int
	// Prefix starts every key line (e.g. "# " to write keys as comments).
	Prefix string
}

// Comment writes each line as a "# " comment.
func (w *TOMLWriter) Comment(lines ...string) {
	for _, l := range lines {
		w.b.WriteString("# " + OneLine(l) + "\n")
	}
}

// Raw writes s as it is (a blank line, a pre-formatted comment).
func (w *TOMLWriter) Raw(s string) { w.b.WriteString(s) }

// Table starts [name], after a blank line, with an optional trailing comment.
func (w *TOMLWriter) Table(name, comment string) {
	w.b.WriteString("\n[" + name + "]")
	w.trailing(comment)
}

// ArrayTable starts one [[name]] element (no blank line: elements follow
// each other).
func (w *TOMLWriter) ArrayTable(name string) { w.b.WriteString("[[" + name + "]]\n") }

// KV writes key = value, with an optional trailing comment.
func (w *TOMLWriter) KV(key string, value any, comment string) {
	line := w.Prefix + key + " = " + TOMLValue(value)
	if comment != "" && w.CommentColumn > 0 {
		line = fmt.Sprintf("%-*s", w.CommentColumn, line)
		w.b.WriteString(line + " # " + OneLine(comment) + "\n")
		return
	}
	w.b.WriteString(line)
	w.trailing(comment)
}

func (w *TOMLWriter) trailing(comment string) {
	if comment != "" {
		w.b.WriteString("  # " + OneLine(comment))
	}
	w.b.WriteByte('\n')
}

// String is what was written.
func (w *TOMLWriter) String() string { return w.b.String() }

// TOMLValue formats a string, bool, integer, float, []float64 or []string as a TOML
// value. A float is written so that it decodes as a float (never an integer)
// equal to v: shortest round-trip digits, nan, inf, -inf.
func TOMLValue(v any) string {
	switch x := v.(type) {
	case string:
		return tomlString(x)
	case LinkClass:
		return tomlString(string(x))
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return tomlFloat(x)
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = tomlFloat(f)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		if len(x) == 0 {
			return "[]"
		}
		var b strings.Builder
		b.WriteString("[\n")
		for _, s := range x {
			b.WriteString("  " + tomlString(s) + ",\n")
		}
		b.WriteString("]")
		return b.String()
	}
	panic(fmt.Sprintf("topology.TOMLValue: unsupported type %T", v))
}

// tomlFloat writes v so that it decodes as a float and back to v exactly.
func tomlFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// OneLine drops control characters, so s cannot end a TOML comment early.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
