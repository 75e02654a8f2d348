//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package shmcomm

// Supported reports whether this platform maps shared segments.
const Supported = false

// Create is not available here.
func Create(dir, name string, ringBytes int, token [TokenBytes]byte) (*Segment, error) {
	return nil, ErrUnsupported
}

// Open is not available here.
func Open(path string, ringBytes int, token [TokenBytes]byte) (*Segment, error) {
	return nil, ErrUnsupported
}

// Close does nothing here.
func (s *Segment) Close() error { return nil }
