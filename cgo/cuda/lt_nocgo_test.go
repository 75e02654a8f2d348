//go:build !cgo

package cuda

import (
	"errors"
	"testing"

	"github.com/partbench/partbench/cgo/dl"
)

func TestLtNoCgo(t *testing.T) {
	for name, err := range map[string]error{
		"LoadCUBLASLt":     func() error { _, err := LoadCUBLASLt(); return err }(),
		"LoadCUBLASLtFrom": func() error { _, err := LoadCUBLASLtFrom(&dl.Library{}); return err }(),
	} {
		if !errors.Is(err, dl.ErrNoCgo) {
			t.Errorf("%s: err = %v, want dl.ErrNoCgo", name, err)
		}
	}
}
