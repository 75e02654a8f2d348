//go:build !cgo

package nccl

import (
	"errors"
	"testing"

	"github.com/partbench/partbench/cgo/dl"
)

func TestNoCgo(t *testing.T) {
	if _, err := Load(); !errors.Is(err, dl.ErrNoCgo) {
		t.Errorf("Load: err = %v, want dl.ErrNoCgo", err)
	}
	if _, err := LoadFrom(&dl.Library{}); !errors.Is(err, dl.ErrNoCgo) {
		t.Errorf("LoadFrom: err = %v, want dl.ErrNoCgo", err)
	}
}
