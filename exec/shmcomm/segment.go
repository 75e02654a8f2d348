package shmcomm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// Segment layout: a header page, then ring 0 (the creator's sends) and ring
// 1 (the opener's sends), each ringCtlBytes of control and then its data.
const (
	headerBytes = 4096
	version     = 2 // 2: each side's waits share one futex word (shareBells)
	// TokenBytes is the size of the secret a segment's creator writes in its
	// header and passes to the opener over another channel.
	TokenBytes = 16
	// MinRingBytes is the smallest ring a segment may have: a frame header
	// and a few elements.
	MinRingBytes = 4096
)

var magic = [4]byte{'P', 'B', 'S', 'M'}

// ErrUnsupported is returned where shared memory is not available to
// partbench (no mmap on this platform).
var ErrUnsupported = errors.New("shmcomm: shared memory is not supported on this platform")

// Segment is a mapped file shared by the two ranks of a pair.
type Segment struct {
	path    string
	mem     []byte
	creator bool
	rings   [2]*Ring
}

// segmentBytes is the file size for rings of ringBytes.
func segmentBytes(ringBytes int) int { return headerBytes + 2*(ringCtlBytes+ringBytes) }

func checkRingBytes(ringBytes int) error {
	if ringBytes < MinRingBytes || ringBytes%64 != 0 || ringBytes > 1<<30 {
		return fmt.Errorf("shmcomm: ring size %d B: want a multiple of 64 B between %d B and 1 GiB", ringBytes, MinRingBytes)
	}
	return nil
}

func (s *Segment) writeHeader(ringBytes int, token [TokenBytes]byte) {
	h := s.mem[:headerBytes]
	copy(h, magic[:])
	binary.LittleEndian.PutUint32(h[4:], version)
	binary.LittleEndian.PutUint64(h[8:], uint64(ringBytes))
	copy(h[16:], token[:])
}

func (s *Segment) checkHeader(ringBytes int, token [TokenBytes]byte) error {
	h := s.mem[:headerBytes]
	switch {
	case [4]byte(h[:4]) != magic || binary.LittleEndian.Uint32(h[4:]) != version:
		return fmt.Errorf("shmcomm: %s is not a partbench segment of version %d", s.path, version)
	case binary.LittleEndian.Uint64(h[8:]) != uint64(ringBytes):
		return fmt.Errorf("shmcomm: %s has rings of %d B, want %d B", s.path, binary.LittleEndian.Uint64(h[8:]), ringBytes)
	case [TokenBytes]byte(h[16:16+TokenBytes]) != token:
		return fmt.Errorf("shmcomm: %s belongs to another job (token differs)", s.path)
	}
	return nil
}

func (s *Segment) initRings(ringBytes int) {
	for i := range s.rings {
		off := headerBytes + i*(ringCtlBytes+ringBytes)
		s.rings[i] = newRing(s.mem[off : off+ringCtlBytes+ringBytes])
	}
	shareBells(s.rings[0], s.rings[1])
}

// Path is the segment's file (gone from the directory once unlinked).
func (s *Segment) Path() string { return s.path }

// Unlink removes the file: the mapping stays until Close, and nothing is
// left behind when the processes end, however they end.
func (s *Segment) Unlink() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shmcomm: %w", err)
	}
	return nil
}

// Link is this side's view: the creator sends on ring 0, the opener on ring 1.
func (s *Segment) Link() *Link {
	if s.creator {
		return &Link{tx: s.rings[0], rx: s.rings[1]}
	}
	return &Link{tx: s.rings[1], rx: s.rings[0]}
}

// DefaultDir is where segments are created: /dev/shm (memory, as NCCL's
// shared-memory transport uses) when it is a writable directory, else the
// temporary directory.
func DefaultDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "partbench-probe-*"); err == nil {
			name := f.Name()
			f.Close()
			os.Remove(name)
			return "/dev/shm"
		}
	}
	return os.TempDir()
}
