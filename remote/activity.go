package remote

import "github.com/partbench/partbench/remote/wire"

// ActivityMeter is a device's activity over a window: StartWindow opens
// one, the function it returns closes it with the busy fraction in [0, 1]
// and the name of its source ("" when nothing could be read). A GPU
// server's is topology/nvmldiscover's SMSampler (GPM SM activity where the
// GPU has it, NVML utilization rates otherwise); remote needs no NVML.
type ActivityMeter interface {
	StartWindow() (stop func() (fraction float64, source string))
}

// Activity is the wire.UtilSampler of an ActivityMeter.
type Activity struct{ Meter ActivityMeter }

var _ wire.UtilSampler = Activity{}

// Start opens a window of the meter.
func (a Activity) Start() func() wire.Utilization {
	stop := a.Meter.StartWindow()
	return func() wire.Utilization {
		f, src := stop()
		return wire.Utilization{Fraction: f, Source: src}
	}
}
