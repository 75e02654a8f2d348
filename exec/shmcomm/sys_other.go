//go:build !linux

package shmcomm

import (
	"os"
	"time"
)

// Without futexes a sleep is a short timed sleep.
func futexWait(_ *uint32, _ uint32, d time.Duration) { time.Sleep(min(d, 50*time.Microsecond)) }

func futexWake(*uint32) {}

func reserve(f *os.File, size int64) error { return f.Truncate(size) }
