//go:build linux || darwin || freebsd || netbsd || openbsd

package shmcomm

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Supported reports whether this platform maps shared segments.
const Supported = true

// Create makes and maps a new segment file name in dir with two rings of
// ringBytes, marked with token. The caller passes the path and token to the
// peer, which calls Open; once it has, either side may Unlink.
func Create(dir, name string, ringBytes int, token [TokenBytes]byte) (*Segment, error) {
	if err := checkRingBytes(ringBytes); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shmcomm: %w", err)
	}
	defer f.Close()
	size := segmentBytes(ringBytes)
	if err := reserve(f, int64(size)); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("shmcomm: reserving %d B for %s: %w", size, path, err)
	}
	mem, err := mapFile(f, size)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	s := &Segment{path: path, mem: mem, creator: true}
	s.writeHeader(ringBytes, token)
	s.initRings(ringBytes)
	return s, nil
}

// Open maps the segment at path that a peer created with the same ringBytes
// and token.
func Open(path string, ringBytes int, token [TokenBytes]byte) (*Segment, error) {
	if err := checkRingBytes(ringBytes); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shmcomm: %w", err)
	}
	defer f.Close()
	size := segmentBytes(ringBytes)
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shmcomm: %w", err)
	}
	if fi.Size() != int64(size) {
		return nil, fmt.Errorf("shmcomm: %s has %d B, want %d B for rings of %d B", path, fi.Size(), size, ringBytes)
	}
	mem, err := mapFile(f, size)
	if err != nil {
		return nil, err
	}
	s := &Segment{path: path, mem: mem}
	if err := s.checkHeader(ringBytes, token); err != nil {
		syscall.Munmap(mem)
		return nil, err
	}
	s.initRings(ringBytes)
	return s, nil
}

func mapFile(f *os.File, size int) ([]byte, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shmcomm: mapping %s: %w", f.Name(), err)
	}
	return mem, nil
}

// Close unmaps the segment. Nothing may touch its rings or links after.
func (s *Segment) Close() error {
	if s.mem == nil {
		return nil
	}
	err := syscall.Munmap(s.mem)
	s.mem = nil
	return err
}
