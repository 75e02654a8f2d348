//go:build !cgo

package dl

import (
	"errors"
	"testing"
)

func TestNoCgo(t *testing.T) {
	if _, err := Open("libc.so.6", Now); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Open: err = %v, want ErrNoCgo", err)
	}
	if _, err := Find(NCCL()); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Find: err = %v, want ErrNoCgo", err)
	}
}
