//go:build cgo

package remote

import (
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVMLSampler is a GPU's SM activity over a window: the GPM metric
// GPM_METRIC_SM_UTIL (the fraction of SMs busy, averaged over the window)
// where the GPU supports GPM (Hopper and later), else the utilization rate
// (the fraction of time a kernel ran) polled every PollInterval.
type NVMLSampler struct {
	lib          nvml.Interface
	dev          nvml.Device
	gpm          bool
	PollInterval time.Duration
}

// NewNVMLSampler opens GPU index through NVML (libnvidia-ml loaded at run time).
func NewNVMLSampler(index int) (*NVMLSampler, error) {
	lib := nvml.New()
	if r := lib.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: init: %s", lib.ErrorString(r))
	}
	dev, r := lib.DeviceGetHandleByIndex(index)
	if r != nvml.SUCCESS {
		lib.Shutdown()
		return nil, fmt.Errorf("nvml: GPU %d: %s", index, lib.ErrorString(r))
	}
	s := &NVMLSampler{lib: lib, dev: dev, PollInterval: 20 * time.Millisecond}
	if sup, r := dev.GpmQueryDeviceSupport(); r == nvml.SUCCESS && sup.IsSupportedDevice != 0 {
		s.gpm = true
	}
	return s, nil
}

// Close shuts NVML down.
func (s *NVMLSampler) Close() { s.lib.Shutdown() }

// Start opens a window.
func (s *NVMLSampler) Start() func() Utilization {
	if s.gpm {
		if stop, ok := s.startGPM(); ok {
			return stop
		}
	}
	return s.startPolling()
}

func (s *NVMLSampler) startGPM() (func() Utilization, bool) {
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
	return func() Utilization {
		defer s.lib.GpmSampleFree(a)
		defer s.lib.GpmSampleFree(b)
		if r := s.dev.GpmSampleGet(b); r != nvml.SUCCESS {
			return Utilization{}
		}
		m := nvml.GpmMetricsGetType{NumMetrics: 1, Sample1: a, Sample2: b}
		m.Metrics[0].MetricId = uint32(nvml.GPM_METRIC_SM_UTIL)
		if r := s.lib.GpmMetricsGet(&m); r != nvml.SUCCESS || m.Metrics[0].NvmlReturn != uint32(nvml.SUCCESS) {
			return Utilization{}
		}
		return Utilization{Fraction: m.Metrics[0].Value / 100, Source: "nvml-gpm-sm-activity"}
	}, true
}

func (s *NVMLSampler) startPolling() func() Utilization {
	var mu sync.Mutex
	var sum float64
	var n int
	poll := func() {
		if u, r := s.dev.GetUtilizationRates(); r == nvml.SUCCESS {
			mu.Lock()
			sum += float64(u.Gpu) / 100
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
	return func() Utilization {
		close(done)
		<-finished
		poll()
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			return Utilization{}
		}
		return Utilization{Fraction: sum / float64(n), Source: "nvml-utilization"}
	}
}
