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

// newQueue makes a standalone tool's stream (non-blocking) and the two
// events its samples are timed between.
func newQueue(drv *cuda.Driver) (stream cuda.Stream, ev [2]cuda.Event, err error) {
	if stream, err = drv.NewStream(cuda.StreamNonBlocking); err != nil {
		return stream, ev, err
	}
	for i := range ev {
		if ev[i], err = drv.NewEvent(cuda.EventDefault); err != nil {
			return stream, ev, err
		}
	}
	return stream, ev, nil
}

// releaseQueue destroys what newQueue made (the parts that exist) and
// releases the tool's primary context, each error handed to keep; it
// leaves them zero.
func releaseQueue(keep func(error), stream *cuda.Stream, ev []cuda.Event, ctx **cuda.Context) {
	for i := range ev {
		if ev[i] != (cuda.Event{}) {
			keep(ev[i].Destroy())
			ev[i] = cuda.Event{}
		}
	}
	if *stream != (cuda.Stream{}) {
		keep(stream.Destroy())
		*stream = cuda.Stream{}
	}
	if *ctx != nil {
		keep((*ctx).Release())
		*ctx = nil
	}
}
