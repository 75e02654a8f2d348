package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/fileio"
)

// MaxConfigBytes bounds every config and calibration file partbench reads.
// Configs are kilobytes (the largest embedded preset is under 3 KiB); a
// layer_map for the largest model allowed (MaxLayers) is under 8 KiB; a
// calibration with its samples is under 64 KiB.
const MaxConfigBytes = 1 << 20

// ReadFile reads a config or calibration file: only a regular file (not a
// device, pipe, socket or directory) of at most MaxConfigBytes. A missing
// file's error matches fs.ErrNotExist. Every error names the path and why.
func ReadFile(name string) ([]byte, error) { return readFile(name, "config") }

// readFile is ReadFile with what ("config", "calibration") in its errors.
func readFile(name, what string) ([]byte, error) {
	data, err := fileio.ReadSmall(name, what, MaxConfigBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && strings.Contains(err.Error(), "not a regular file") {
		return nil, fmt.Errorf("%w, or standard input (-)", err)
	}
	return data, err
}

// readBounded reads r to its end, refusing more than MaxConfigBytes.
func readBounded(r io.Reader, source, what string) ([]byte, error) {
	return fileio.ReadBounded(r, source, what, MaxConfigBytes)
}

// syntaxError reports a TOML syntax error as file:line:column, the message
// and the offending line with a caret under the column. It does not call
// toml.ParseError.ErrorWithPosition, which panics on some inputs (an
// unterminated escape at the end of the file: `"\`).
func syntaxError(data []byte, source string, perr toml.ParseError) error {
	return positionedError(data, source, "syntax error", perr)
}

// positionedError is syntaxError's report under another label (what the
// error is: "syntax error", "invalid value").
func positionedError(data []byte, source, label string, perr toml.ParseError) error {
	// Position.Start (a byte offset) is reliable; Position.Line is not at the
	// end of the input, and Col is only filled by ErrorWithPosition.
	start := min(max(perr.Position.Start, 0), len(data))
	lineStart := bytes.LastIndexByte(data[:start], '\n') + 1
	lineEnd := bytes.IndexByte(data[lineStart:], '\n')
	if lineEnd < 0 {
		lineEnd = len(data)
	} else {
		lineEnd += lineStart
	}
	line := bytes.Count(data[:lineStart], []byte("\n")) + 1
	col := utf8.RuneCount(data[lineStart:start]) + 1
	text := strings.TrimRight(string(data[lineStart:lineEnd]), "\r")
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s:%d:%d: %s: %s\n", source, line, col, label, perr.Message)
	fmt.Fprintf(&b, "  %4d | %s\n", line, printable(text))
	fmt.Fprintf(&b, "       | %s^", strings.Repeat(" ", col-1))
	return errors.New(b.String())
}

// printable replaces control characters so the echoed line cannot move the
// terminal's cursor.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
