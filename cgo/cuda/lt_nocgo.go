//go:build !cgo

package cuda

import (
	"fmt"

	"github.com/partbench/partbench/cgo/dl"
)

func bindLt(*dl.Library) (ltAPI, error) { return nil, fmt.Errorf("cublaslt: %w", dl.ErrNoCgo) }
