package topology

import "errors"

// ErrNoGPU says there is nothing to discover here: NVML cannot be loaded or
// initialised, reports no devices, or the binary was built without cgo.
// Errors from Discover and DiscoverLocal match it with errors.Is.
var ErrNoGPU = errors.New("no GPU found through NVML")

// NoGPU is an error matching ErrNoGPU, with its cause (what failed).
func NoGPU(cause string) error { return &noGPUError{cause: cause} }

// noGPUError is ErrNoGPU with its cause, in one line that points at presets.
type noGPUError struct{ cause string }

func (e *noGPUError) Error() string {
	return "no GPU to discover (" + e.cause + "); use --preset NAME to show a preset instead, e.g. --preset dgx-h100x2"
}

func (e *noGPUError) Is(target error) bool { return target == ErrNoGPU }
