//go:build !cgo

package cuda

import (
	"errors"
	"testing"

	"github.com/partbench/partbench/cgo/dl"
)

func TestNoCgo(t *testing.T) {
	for name, err := range map[string]error{
		"Load":           func() error { _, err := Load(); return err }(),
		"LoadFrom":       func() error { _, err := LoadFrom(&dl.Library{}); return err }(),
		"LoadCUBLAS":     func() error { _, err := LoadCUBLAS(); return err }(),
		"LoadCUBLASFrom": func() error { _, err := LoadCUBLASFrom(&dl.Library{}); return err }(),
		"LoadNVRTC":      func() error { _, err := LoadNVRTC(); return err }(),
		"LoadNVRTCFrom":  func() error { _, err := LoadNVRTCFrom(&dl.Library{}); return err }(),
	} {
		if !errors.Is(err, dl.ErrNoCgo) {
			t.Errorf("%s: err = %v, want dl.ErrNoCgo", name, err)
		}
	}
}
