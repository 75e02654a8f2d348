package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
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
	// Stat before opening: opening a named pipe blocks until a writer comes.
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := regularAndSmall(name, what, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer f.Close()
	// Again on the open file, in case the path was replaced in between.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := regularAndSmall(name, what, fi); err != nil {
		return nil, err
	}
	return readBounded(f, name, what)
}

func regularAndSmall(name, what string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("read %s %s: not a regular file (%s); a %s is read from a regular file or standard input (-)", what, name, fileKind(fi.Mode()), what)
	}
	if fi.Size() > MaxConfigBytes {
		return fmt.Errorf("read %s %s: %d bytes, more than the %d bytes (1 MiB) a %s may have", what, name, fi.Size(), MaxConfigBytes, what)
	}
	return nil
}

// readBounded reads r to its end, refusing more than MaxConfigBytes.
func readBounded(r io.Reader, source, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, source, err)
	}
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("read %s %s: more than the %d bytes (1 MiB) a %s may have", what, source, MaxConfigBytes, what)
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// syntaxError reports a TOML syntax error as file:line:column, the message
// and the offending line with a caret under the column. It does not call
// toml.ParseError.ErrorWithPosition, which panics on some inputs (an
// unterminated escape at the end of the file: `"\`).
func syntaxError(data []byte, source string, perr toml.ParseError) error {
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
	fmt.Fprintf(&b, "%s:%d:%d: syntax error: %s\n", source, line, col, perr.Message)
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
