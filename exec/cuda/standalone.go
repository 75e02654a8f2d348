package cuda

import (
	"errors"
	"fmt"

	"github.com/partbench/partbench/cgo/cuda"
)

// loadStandalone compiles src (a kernel file that includes no header) for
// the device info describes, a cubin where NVRTC can make one, else PTX,
// and loads it: the modules of the tools that run beside the backend (the
// L2 probe, the calibration). It returns the module and which image it is
// ("sm_90 cubin=true").
func loadStandalone(drv *cuda.Driver, rtc *cuda.NVRTC, info cuda.DeviceInfo, src, name string) (cuda.Module, string, error) {
	var errs []error
	for _, cubin := range []bool{true, false} {
		if cubin && !rtc.HasCUBIN() {
			continue
		}
		out, err := rtc.Compile(src, name, cuda.ArchOption(info.ComputeMajor, info.ComputeMinor, cubin))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m, err := drv.LoadModule(out.Image)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return m, fmt.Sprintf("sm_%d%d cubin=%v", info.ComputeMajor, info.ComputeMinor, cubin), nil
	}
	return cuda.Module{}, "", errors.Join(errs...)
}
