package fileio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinkHops bounds how many symlinks WriteAtomic follows to a target
// that does not exist yet (Linux's own limit is 40).
const maxLinkHops = 40

// WriteAtomic writes path so that a reader never sees a partial file, and
// without destroying what path names:
//
//   - a regular file (or a missing one) is written through a temporary file
//     beside it and renamed into place;
//   - a symlink is followed: the file it points to is replaced the same way
//     (the temporary file beside the target), and the symlink stays;
//   - a special file (a character device such as /dev/null, a named pipe,
//     a terminal, /dev/stdout) is opened and written in place, as a shell's
//     redirection would, never replaced; so is a path reached through
//     /dev/fd or /proc (/dev/stdout when standard output is a file), which
//     is appended to;
//   - a directory is refused.
//
// Writing in place to a named pipe waits, as any writer does, for a reader.
func WriteAtomic(path string, write func(io.Writer) error) error {
	target, fi, err := resolve(path)
	if err != nil {
		return err
	}
	if fi != nil {
		switch {
		case fi.IsDir():
			return fmt.Errorf("%s is a directory", path)
		case !fi.Mode().IsRegular():
			return writeInPlace(path, os.O_WRONLY, write)
		case viaProc(path):
			return writeInPlace(path, os.O_WRONLY|os.O_APPEND, write)
		}
	}
	perm := fs.FileMode(0o644)
	if fi != nil {
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return createError(path, target, err)
	}
	defer os.Remove(tmp.Name())
	if err := writeAndClose(tmp, write); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// resolve returns the file a write to path lands on and its FileInfo (nil
// when it does not exist yet). Symlinks are followed, also dangling ones, so
// the rename replaces the target and not the link.
func resolve(path string) (string, os.FileInfo, error) {
	lfi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	if lfi.Mode()&os.ModeSymlink == 0 {
		return path, lfi, nil
	}
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			// Written in place through path itself: /proc/self/fd links
			// name pipes and sockets that no path reaches.
			return path, fi, nil
		}
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", nil, err
		}
		return target, fi, nil
	}
	// A dangling symlink: follow it by hand to the missing file it names.
	p := path
	for range maxLinkHops {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return p, fi, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return "", nil, fmt.Errorf("%s: more than %d symlinks", path, maxLinkHops)
}

// viaProc tells whether path reaches a regular file through a process's
// file descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N, or a symlink
// to one of them): replacing that file would cut it from the descriptor the
// process already writes to.
func viaProc(path string) bool {
	p := path
	for range maxLinkHops {
		if p == "/dev/stdout" || p == "/dev/stderr" || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/") {
			return true
		}
		link, err := os.Readlink(p)
		if err != nil {
			return false
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return false
}

func writeInPlace(path string, flag int, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return err
	}
	return writeAndClose(f, write)
}

func writeAndClose(f *os.File, write func(io.Writer) error) error {
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// createError says why path cannot be created, naming the user's path and
// the folder, not the temporary file the write would have used.
func createError(path, target string, err error) error {
	dir := filepath.Dir(target)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot create %s: folder %s does not exist", path, dir)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot create %s: no permission to write in %s", path, dir)
	}
	return fmt.Errorf("cannot create %s in %s: %w", path, dir, err)
}

// CheckWritable says, before any work, whether WriteAtomic could write
// path: a directory is refused, an existing special file or one reached
// through /proc must open for writing, and otherwise the folder the file
// would land in must take a new file (probed with a temporary file,
// removed at once). Nothing at path is changed.
func CheckWritable(path string) error {
	if path == "" {
		return nil
	}
	target, fi, err := resolve(path)
	if err != nil {
		return err
	}
	if fi != nil {
		switch {
		case fi.IsDir():
			return fmt.Errorf("%s is a directory", path)
		case !fi.Mode().IsRegular() && fi.Mode()&fs.ModeNamedPipe != 0:
			return nil // opening a pipe for writing waits for a reader: the write will
		case !fi.Mode().IsRegular(), viaProc(path):
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return fmt.Errorf("cannot write %s: %w", path, err)
			}
			return f.Close()
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".probe-*")
	if err != nil {
		return createError(path, target, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}
