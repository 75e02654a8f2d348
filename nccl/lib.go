package nccl

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/partbench/partbench/cgo/dl"
)

// Lib is a loaded NCCL library.
type Lib struct {
	dl      *dl.Library
	c       api
	version Version
	closed  sync.Once
}

// Load finds libnccl.so.2 (dl.NCCL: $PARTBENCH_NCCL_LIB, LD_LIBRARY_PATH,
// $CUDA_HOME, the system loader, Python wheels) and binds it.
func Load() (*Lib, error) {
	lib, err := dl.Find(dl.NCCL())
	if err != nil {
		return nil, fmt.Errorf("nccl: %w", err)
	}
	l, err := LoadFrom(lib)
	if err != nil {
		lib.Close()
		return nil, err
	}
	return l, nil
}

// LoadFrom binds an already opened library (the seam tests use to load a
// fake). It fails naming every mandatory symbol the library lacks. On
// success the Lib owns lib: Close closes it.
func LoadFrom(lib *dl.Library) (*Lib, error) {
	c, err := bind(lib)
	if err != nil {
		return nil, err
	}
	l := &Lib{dl: lib, c: c}
	code, r := c.getVersion()
	if r != Success {
		c.free()
		return nil, callError("ncclGetVersion", r, c.getLastError(0))
	}
	l.version = ParseVersion(code)
	return l, nil
}

// Path is the file the library was loaded from.
func (l *Lib) Path() string { return l.dl.File() }

// Version asks the library for its version (ncclGetVersion).
func (l *Lib) Version() (Version, error) {
	code, r := l.c.getVersion()
	if r != Success {
		return Version{}, l.fail("ncclGetVersion", r, 0)
	}
	return ParseVersion(code), nil
}

// HasInitConfig reports whether the library has ncclCommInitRankConfig
// (NCCL ≥ 2.14), which WithConfig needs.
func (l *Lib) HasInitConfig() bool { return l.c.hasInitConfig() }

// ErrorString is the library's own text for r (ncclGetErrorString).
func (l *Lib) ErrorString(r Result) string { return l.c.getErrorString(r) }

// GetUniqueID makes the id one rank creates and every rank of a new
// communicator passes to CommInitRank.
func (l *Lib) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	if r := l.c.getUniqueID(&id); r != Success {
		return UniqueID{}, l.fail("ncclGetUniqueId", r, 0)
	}
	return id, nil
}

// GroupStart opens a group of calls (ncclGroupStart). NCCL keeps the group
// per OS thread, so GroupStart pins the calling goroutine to its thread
// until the matching GroupEnd: call both, and everything between, from
// one goroutine. Calls inside a group are counted when they are made.
func (l *Lib) GroupStart() error {
	runtime.LockOSThread()
	if r := l.c.groupStart(); r != Success {
		runtime.UnlockOSThread()
		return l.fail("ncclGroupStart", r, 0)
	}
	return nil
}

// GroupEnd closes the group GroupStart opened and unpins the goroutine. On
// a non-blocking communicator it may return before the group is enqueued
// (ncclInProgress, reported as nil): wait with (*Comm).Wait.
func (l *Lib) GroupEnd() error {
	defer runtime.UnlockOSThread()
	if r := l.c.groupEnd(); r != Success && r != InProgress {
		return l.fail("ncclGroupEnd", r, 0)
	}
	return nil
}

// Close releases the symbol table and closes the library. Every Comm must
// be destroyed first. Closing twice does nothing.
func (l *Lib) Close() error {
	var err error
	l.closed.Do(func() {
		l.c.free()
		err = l.dl.Close()
	})
	return err
}

func (l *Lib) fail(call string, r Result, comm uintptr) error {
	return callError(call, r, l.c.getLastError(comm))
}
