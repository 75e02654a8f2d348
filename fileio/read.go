package fileio

import (
	"fmt"
	"io"
	"os"
)

// ReadSmall reads name, which must be a regular file (not a device, pipe,
// socket or directory) of at most limit bytes. what names the input in
// errors ("--ids-file", "config", "config.json"), so each error says which
// input, which path and why. A missing file's error matches fs.ErrNotExist.
//
// The file is checked before it is opened (opening a named pipe blocks until
// a writer comes) and again once open (the path may have been replaced in
// between), and at most limit+1 bytes are ever read.
func ReadSmall(name, what string, limit int64) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := RegularAndSmall(name, what, fi, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := RegularAndSmall(name, what, fi, limit); err != nil {
		return nil, err
	}
	return ReadBounded(f, name, what, limit)
}

// RegularAndSmall refuses fi unless it is a regular file of at most limit
// bytes, naming what and name.
func RegularAndSmall(name, what string, fi os.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("read %s %s: not a regular file (%s); a %s is read from a regular file", what, name, FileKind(fi.Mode()), what)
	}
	if fi.Size() > limit {
		return fmt.Errorf("read %s %s: %d bytes, more than the %s a %s may have", what, name, fi.Size(), SizeString(limit), what)
	}
	return nil
}

// ReadBounded reads r to its end, refusing more than limit bytes; source and
// what label errors.
func ReadBounded(r io.Reader, source, what string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, source, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s %s: more than the %s a %s may have", what, source, SizeString(limit), what)
	}
	return data, nil
}

// SizeString writes n bytes as "1048576 bytes (1 MiB)", or "N bytes" when n
// is not a whole number of KiB, MiB or GiB.
func SizeString(n int64) string {
	for _, u := range []struct {
		name  string
		bytes int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && n%u.bytes == 0 {
			return fmt.Sprintf("%d bytes (%d %s)", n, n/u.bytes, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// FileKind names a non-regular file's kind for an error message.
func FileKind(m os.FileMode) string {
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
	case m&os.ModeSymlink != 0:
		return "a symlink"
	}
	return "mode " + m.String()
}
