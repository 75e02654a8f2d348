package configs

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Bounds on a TOML document's shape, checked by a linear pre-scan of its
// text before it is decoded (CheckTOMLShape). The TOML decoder's time and
// memory grow faster than linearly with a key's parts and with nesting: a
// 40 KB file holding one dotted key of 20,000 parts took 125 s and 5.3 GB
// to decode, a 3,000-deep inline table 15 s and a 9 MB error. The deepest
// key any partbench schema has is under 6 parts and the deepest value
// (a layer map's list of lists inside a table) under 4 levels.
const (
	// MaxKeyParts bounds the parts of one key (a.b.c is 3), in a table
	// header, before an = or inside an inline table.
	MaxKeyParts = 16
	// MaxKeyBytes bounds one key's length in bytes, quotes included.
	MaxKeyBytes = 1024
	// MaxNesting bounds how deep arrays and inline tables nest.
	MaxNesting = 16
	// maxListedKeys is how many unknown keys an error lists before
	// "and N more".
	maxListedKeys = 10
	// maxListedKeyBytes is where a listed key is cut.
	maxListedKeyBytes = 80
)

// CheckTOMLShape refuses a TOML document whose keys have more than
// MaxKeyParts parts or MaxKeyBytes bytes, or whose values nest more than
// MaxNesting deep, in one pass over the text (strings and comments
// skipped). It does not validate the syntax otherwise: the decoder does. The
// error names source, the line and the bound.
func CheckTOMLShape(data []byte, source string) error {
	var (
		stack    []byte // open '[' (array) and '{' (inline table) of values
		inKey    = true // reading a key: at a line's start, after '{' or ','
		header   = false
		parts    = 1
		keyBytes = 0
		line     = 1
		keyStart = 0
	)
	newKey := func(at int) { inKey, parts, keyBytes, keyStart = true, 1, 0, at }
	keyErr := func(why string) error {
		end := min(keyStart+40, len(data))
		shown := strings.TrimSpace(string(data[keyStart:end]))
		if i := strings.IndexAny(shown, "=\n"); i >= 0 {
			shown = strings.TrimSpace(shown[:i])
		}
		return fmt.Errorf("%s:%d: key %s… %s", source, line, printable(shown), why)
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i-- // the newline is handled by the loop
		case '"', '\'':
			j, nl := skipString(data, i)
			line += nl
			if inKey {
				keyBytes += j - i
			}
			i = j - 1
		case '\n':
			line++
			if len(stack) == 0 {
				newKey(i + 1)
				header = false
			}
		case '=':
			if inKey && !header {
				inKey = false
			}
		case '.':
			if inKey {
				parts++
			}
		case '{':
			stack = append(stack, c)
			newKey(i + 1)
		case '[':
			if len(stack) == 0 && inKey && !header {
				// A table header: [a.b] or [[a.b]].
				header = true
				if i+1 < len(data) && data[i+1] == '[' {
					i++
				}
				keyStart = i + 1
				continue
			}
			stack = append(stack, c)
			inKey = false
		case ']', '}':
			if header && len(stack) == 0 {
				header, inKey = false, false
				continue
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			inKey = false
		case ',':
			if len(stack) > 0 && stack[len(stack)-1] == '{' {
				newKey(i + 1)
			}
		case ' ', '\t', '\r':
		default:
			if inKey {
				keyBytes++
			}
		}
		if len(stack) > MaxNesting {
			return fmt.Errorf("%s:%d: arrays and inline tables nested more than %d deep; a partbench file nests at most a few levels", source, line, MaxNesting)
		}
		if inKey && parts > MaxKeyParts {
			return keyErr(fmt.Sprintf("has more than %d dotted parts; partbench keys have at most a few", MaxKeyParts))
		}
		if inKey && keyBytes > MaxKeyBytes {
			return keyErr(fmt.Sprintf("is longer than %d bytes", MaxKeyBytes))
		}
	}
	return nil
}

// skipString returns the index just past the string starting at data[i]
// (basic "…", literal '…', or their multi-line """…""" and ”'…”' forms;
// an unterminated one runs to the end) and how many newlines it holds.
func skipString(data []byte, i int) (end, newlines int) {
	q := data[i]
	if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
		delim := string([]byte{q, q, q})
		j := i + 3
		for j < len(data) {
			if q == '"' && data[j] == '\\' {
				if j+1 < len(data) && data[j+1] == '\n' {
					newlines++
				}
				j += 2
				continue
			}
			if data[j] == '\n' {
				newlines++
			}
			if strings.HasPrefix(string(data[j:min(j+3, len(data))]), delim) {
				j += 3
				// Up to two more quotes belong to the string ("""a"""").
				for k := 0; k < 2 && j < len(data) && data[j] == q; k++ {
					j++
				}
				return j, newlines
			}
			j++
		}
		return len(data), newlines
	}
	j := i + 1
	for j < len(data) && data[j] != '\n' {
		if q == '"' && data[j] == '\\' {
			j += 2
			continue
		}
		if data[j] == q {
			return j + 1, newlines
		}
		j++
	}
	return min(j, len(data)), newlines
}

// keyList joins the first keys of total for an error, then "and N more".
func keyList(keys []string, total int) string {
	if total <= len(keys) {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys, ", "), total-len(keys))
}

// UnknownKeys lists undecoded keys for a strict decoder's error: the first
// ten (each cut at 80 bytes, control characters replaced), then "and N
// more", so a file of thousands of unknown keys gets a short error.
func UnknownKeys(und []toml.Key) string {
	keys := make([]string, 0, min(len(und), maxListedKeys))
	for _, k := range und[:min(len(und), maxListedKeys)] {
		s := k.String()
		if len(s) > maxListedKeyBytes {
			s = s[:maxListedKeyBytes] + "…"
		}
		keys = append(keys, printable(s))
	}
	return keyList(keys, len(und))
}
