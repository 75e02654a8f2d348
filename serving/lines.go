package serving

import (
	"bufio"
	"fmt"
	"io"
)

// lineReader reads a server-sent event stream line by line, bounded.
type lineReader struct{ sc *bufio.Scanner }

const maxSSELineBytes = 1 << 20

func newLineReader(r io.Reader) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxSSELineBytes)
	return &lineReader{sc: sc}
}

func (l *lineReader) next() (string, error) {
	if l.sc.Scan() {
		return l.sc.Text(), nil
	}
	if err := l.sc.Err(); err != nil {
		return "", fmt.Errorf("reading the stream: %w", err)
	}
	return "", io.EOF
}
