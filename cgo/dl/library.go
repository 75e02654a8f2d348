package dl

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// ErrNoCgo is returned by every entry point of a binary built with CGO_ENABLED=0.
var ErrNoCgo = errors.New("built without cgo (CGO_ENABLED=0): cannot load shared libraries; rebuild with CGO_ENABLED=1")

// Library is an open shared library. Its methods are safe for concurrent use.
type Library struct {
	path string

	mu     sync.Mutex
	handle unsafe.Pointer // nil once closed
}

// Open loads the shared library at path (a file path, or a bare soname the
// system loader resolves) with dlopen flags such as Now|Local.
func Open(path string, flags int) (*Library, error) {
	if path == "" {
		return nil, errors.New("dl: open: empty library path")
	}
	h, err := sysOpen(path, flags)
	if err != nil {
		return nil, fmt.Errorf("dl: open %s: %w", path, err)
	}
	FixSignalStacks() // a library's constructors may have installed handlers
	return &Library{path: path, handle: h}, nil
}

// Path is the path (or soname) the library was opened with.
func (l *Library) Path() string { return l.path }

// File is the file the loader actually mapped (the resolved path of a
// soname), or Path when the loader cannot tell.
func (l *Library) File() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle != nil {
		if f := sysFile(l.handle); f != "" {
			return f
		}
	}
	return l.path
}

// Lookup returns the address of symbol sym.
func (l *Library) Lookup(sym string) (unsafe.Pointer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil, fmt.Errorf("dl: lookup %s in %s: library is closed", sym, l.path)
	}
	p, err := sysSym(l.handle, sym)
	if err != nil {
		return nil, fmt.Errorf("dl: lookup %s in %s: %w", sym, l.path, err)
	}
	return p, nil
}

// Close unloads the library. Symbols looked up earlier must not be used
// afterwards. Closing twice is not an error.
func (l *Library) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil
	}
	err := sysClose(l.handle)
	l.handle = nil
	if err != nil {
		return fmt.Errorf("dl: close %s: %w", l.path, err)
	}
	return nil
}
