package wire

import (
	"fmt"
	"strings"

	"github.com/partbench/partbench/fileio"
)

// MaxTokenFileBytes bounds a token file; MaxPEMFileBytes a certificate,
// key or CA file.
const (
	MaxTokenFileBytes = 4 << 10
	MaxPEMFileBytes   = 1 << 20
)

// ReadTokenFile reads a token file: a regular file of at most
// MaxTokenFileBytes holding one non-empty token.
func ReadTokenFile(flag, path string) (string, error) {
	b, err := ReadSmallFile(flag, path, MaxTokenFileBytes)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("%s %s: the file must hold one non-empty token on one line", flag, path)
	}
	return tok, nil
}

// ReadSmallFile reads a small input named by flag: only a regular file (a
// device such as /dev/zero, a named pipe, a socket or a directory is
// refused before it is opened, so nothing blocks or grows without end) of
// at most max bytes.
func ReadSmallFile(flag, path string, max int64) ([]byte, error) {
	return fileio.ReadSmall(path, flag, max)
}
