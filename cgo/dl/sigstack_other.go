//go:build !cgo || !linux

package dl

// FixSignalStacks does nothing where no C library can be loaded (or off
// Linux): see sigstack_cgo.go.
func FixSignalStacks() int { return 0 }
