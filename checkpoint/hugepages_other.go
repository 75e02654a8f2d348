//go:build !linux

package checkpoint

import "errors"

// adviseHuge is refused off Linux: the values are faulted in at the base
// page size.
var adviseHuge = func([]byte) error { return errors.ErrUnsupported }
