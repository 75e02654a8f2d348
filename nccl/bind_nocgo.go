//go:build !cgo

package nccl

import (
	"fmt"

	"github.com/partbench/partbench/cgo/dl"
)

func bind(*dl.Library) (api, error) { return nil, fmt.Errorf("nccl: %w", dl.ErrNoCgo) }
