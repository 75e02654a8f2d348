//go:build !cgo

package dl

import "unsafe"

// dlopen flags with their glibc values, so code that names them still
// builds with CGO_ENABLED=0 (where nothing can be opened).
const (
	Lazy   = 0x1
	Now    = 0x2
	Global = 0x100
	Local  = 0x0
)

const cgoEnabled = false

func sysOpen(string, int) (unsafe.Pointer, error)           { return nil, ErrNoCgo }
func sysSym(unsafe.Pointer, string) (unsafe.Pointer, error) { return nil, ErrNoCgo }
func sysClose(unsafe.Pointer) error                         { return ErrNoCgo }
func sysFile(unsafe.Pointer) string                         { return "" }
