//go:build !linux

package checkpoint

import (
	"errors"
	"syscall"
)

// populateWriteSystem: populating pages ahead of their first write is
// Linux's advice only; elsewhere every call is refused and runReads
// populates nothing.
func populateWriteSystem([]byte) error { return errRefused }

// errRefused is what populateWriteSystem returns where there is no advice.
var errRefused = errors.New("no MADV_POPULATE_WRITE on this system")

// populateRefused reports whether err is a refusal: populateWriteSystem's
// here, or EINVAL as Linux gives it.
func populateRefused(err error) bool {
	return errors.Is(err, errRefused) || errors.Is(err, syscall.EINVAL)
}

// pageResidentSystem: without the advice there is nothing to skip.
func pageResidentSystem([]byte) bool { return false }
