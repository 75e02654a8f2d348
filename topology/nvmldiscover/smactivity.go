//go:build cgo

package nvmldiscover

import (
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The activity sources a window reports.
const (
	SourceGPMSMActivity = "nvml-gpm-sm-activity"
	SourceUtilization   = "nvml-utilization"
)

// SMSampler is a GPU's SM activity over a window: the GPM metric
// GPM_METRIC_SM_UTIL (the fraction of SMs busy, averaged over the window)
// where the GPU supports GPM (Hopper and later) and the window lasts at
// least GPMMinWindow, else the utilization rate (the fraction of time a
// kernel ran over the driver's own sample period) polled every
// PollInterval.
type SMSampler struct {
	lib          nvml.Interface
	dev          nvml.Device
	gpm          bool
	PollInterval time.Duration
	// GPMMinWindow is the shortest window GPM answers for. NVML's GPM
	// documentation asks for at least 100 ms between the two samples a
	// metric is computed from (the counters refresh at that rate); on an
	// H200, windows of 1–15 ms (one remote request of a tiny model) read
	// 0 % for every request. A shorter window reports the utilization
	// rate instead, under its own source name.
	GPMMinWindow time.Duration
}

// DefaultGPMMinWindow is NVML's minimum interval between two GPM samples.
const DefaultGPMMinWindow = 100 * time.Millisecond

// NewSMSampler opens GPU index through NVML (libnvidia-ml loaded at run
// time).
func NewSMSampler(index int) (*SMSampler, error) { return NewSMSamplerFrom(nvml.New(), index) }

// NewSMSamplerFrom opens GPU index through lib (a test's seam: go-nvml's
// mock). It initializes lib; Close shuts it down.
func NewSMSamplerFrom(lib nvml.Interface, index int) (*SMSampler, error) {
	if r := lib.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: init: %s", lib.ErrorString(r))
	}
	dev, r := lib.DeviceGetHandleByIndex(index)
	if r != nvml.SUCCESS {
		lib.Shutdown()
		return nil, fmt.Errorf("nvml: GPU %d: %s", index, lib.ErrorString(r))
	}
	s := &SMSampler{lib: lib, dev: dev, PollInterval: 20 * time.Millisecond, GPMMinWindow: DefaultGPMMinWindow}
	if sup, r := dev.GpmQueryDeviceSupport(); r == nvml.SUCCESS && sup.IsSupportedDevice != 0 {
		s.gpm = true
	}
	return s, nil
}

// GPM says whether the windows read GPM's SM activity.
func (s *SMSampler) GPM() bool { return s.gpm }

// Close shuts NVML down.
func (s *SMSampler) Close() { s.lib.Shutdown() }

// StartWindow opens a window; the function it returns closes it and gives
// the fraction in [0, 1] and its source ("" when nothing could be read).
func (s *SMSampler) StartWindow() func() (float64, string) {
	if s.gpm {
		if stop, ok := s.startGPM(); ok {
			return stop
		}
	}
	return s.startPolling()
}

func (s *SMSampler) startGPM() (func() (float64, string), bool) {
	a, r := s.lib.GpmSampleAlloc()
	if r != nvml.SUCCESS {
		return nil, false
	}
	b, r := s.lib.GpmSampleAlloc()
	if r != nvml.SUCCESS {
		s.lib.GpmSampleFree(a)
		return nil, false
	}
	if r := s.dev.GpmSampleGet(a); r != nvml.SUCCESS {
		s.lib.GpmSampleFree(a)
		s.lib.GpmSampleFree(b)
		return nil, false
	}
	start := time.Now()
	return func() (float64, string) {
		defer s.lib.GpmSampleFree(a)
		defer s.lib.GpmSampleFree(b)
		if time.Since(start) < s.GPMMinWindow {
			return s.utilizationNow()
		}
		if r := s.dev.GpmSampleGet(b); r != nvml.SUCCESS {
			return 0, ""
		}
		m := nvml.GpmMetricsGetType{NumMetrics: 1, Sample1: a, Sample2: b}
		m.Metrics[0].MetricId = uint32(nvml.GPM_METRIC_SM_UTIL)
		if r := s.lib.GpmMetricsGet(&m); r != nvml.SUCCESS || m.Metrics[0].NvmlReturn != uint32(nvml.SUCCESS) {
			return 0, ""
		}
		return m.Metrics[0].Value / 100, SourceGPMSMActivity
	}, true
}

// utilizationNow is the driver's utilization rate now: the fraction of
// its last sample period (1/6 s to 1 s by product) in which a kernel ran.
func (s *SMSampler) utilizationNow() (float64, string) {
	u, r := s.dev.GetUtilizationRates()
	if r != nvml.SUCCESS {
		return 0, ""
	}
	return float64(u.Gpu) / 100, SourceUtilization
}

func (s *SMSampler) startPolling() func() (float64, string) {
	var mu sync.Mutex
	var sum float64
	var n int
	poll := func() {
		if u, src := s.utilizationNow(); src != "" {
			mu.Lock()
			sum += u
			n++
			mu.Unlock()
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(s.PollInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				poll()
			}
		}
	}()
	return func() (float64, string) {
		close(done)
		<-finished
		poll()
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			return 0, ""
		}
		return sum / float64(n), SourceUtilization
	}
}
