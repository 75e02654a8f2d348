//go:build !cgo

package cblas

import (
	"fmt"

	"github.com/partbench/partbench/cgo/dl"
)

// Library is unavailable without cgo.
type Library struct{}

// Load reports that a binary built without cgo loads no library.
func Load(dl.Spec) (*Library, error) { return nil, fmt.Errorf("cblas: %w", dl.ErrNoCgo) }

func (*Library) Path() string                         { return "" }
func (*Library) SetThreads(int) bool                  { return false }
func (*Library) Threads() int                         { return 0 }
func (*Library) Sgemm(m, n, k int, a, b, c []float32) { panic("cblas: built without cgo") }
