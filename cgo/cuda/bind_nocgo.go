//go:build !cgo

package cuda

import (
	"fmt"

	"github.com/partbench/partbench/cgo/dl"
)

func bindDriver(*dl.Library) (drvAPI, error) { return nil, fmt.Errorf("cuda: %w", dl.ErrNoCgo) }
func bindBLAS(*dl.Library) (blasAPI, error)  { return nil, fmt.Errorf("cublas: %w", dl.ErrNoCgo) }
func bindNVRTC(*dl.Library) (rtcAPI, error)  { return nil, fmt.Errorf("nvrtc: %w", dl.ErrNoCgo) }
