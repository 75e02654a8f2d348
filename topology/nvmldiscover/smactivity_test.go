//go:build cgo

package nvmldiscover

import (
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// smNVML is a one-GPU NVML whose device has GPM or not; it counts GPM
// samples allocated and freed, and answers utilization rates from util.
type smNVML struct {
	lib           *mock.Interface
	dev           *mock.Device
	allocs, frees int
	shutdowns     int
	util          uint32
}

func newSMNVML(gpm bool, smUtilPercent float64) *smNVML {
	n := &smNVML{}
	n.dev = &mock.Device{
		GpmQueryDeviceSupportFunc: func() (nvml.GpmSupport, nvml.Return) {
			s := nvml.GpmSupport{}
			if gpm {
				s.IsSupportedDevice = 1
			}
			return s, nvml.SUCCESS
		},
		GpmSampleGetFunc: func(nvml.GpmSample) nvml.Return { return nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: n.util}, nvml.SUCCESS
		},
	}
	var samples []nvml.GpmSample
	n.lib = &mock.Interface{
		InitFunc:     func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc: func() nvml.Return { n.shutdowns++; return nvml.SUCCESS },
		ErrorStringFunc: func(r nvml.Return) string {
			return map[nvml.Return]string{nvml.ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found", nvml.ERROR_INVALID_ARGUMENT: "Invalid Argument"}[r]
		},
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i != 0 {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return n.dev, nvml.SUCCESS
		},
		GpmSampleAllocFunc: func() (nvml.GpmSample, nvml.Return) {
			n.allocs++
			s := &mock.GpmSample{}
			samples = append(samples, s)
			return s, nvml.SUCCESS
		},
		GpmSampleFreeFunc: func(nvml.GpmSample) nvml.Return { n.frees++; return nvml.SUCCESS },
		GpmMetricsGetFunc: func(m *nvml.GpmMetricsGetType) nvml.Return {
			// The window's two samples, first then last, and the SM metric.
			if m.NumMetrics != 1 || m.Metrics[0].MetricId != uint32(nvml.GPM_METRIC_SM_UTIL) ||
				len(samples) < 2 || m.Sample1 != samples[len(samples)-2] || m.Sample2 != samples[len(samples)-1] {
				return nvml.ERROR_INVALID_ARGUMENT
			}
			m.Metrics[0].Value = smUtilPercent
			m.Metrics[0].NvmlReturn = uint32(nvml.SUCCESS)
			return nvml.SUCCESS
		},
	}
	return n
}

// Where the GPU has GPM, a window is GPM's SM activity between a sample at
// its start and one at its end (37.5 % → 0.375), both samples freed.
func TestSMSamplerGPM(t *testing.T) {
	n := newSMNVML(true, 37.5)
	s, err := NewSMSamplerFrom(n.lib, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !s.GPM() {
		t.Fatal("a GPU with GPM support is sampled without it")
	}
	s.GPMMinWindow = 0 // the mock's counters need no refresh interval
	f, src := s.StartWindow()()
	if f != 0.375 || src != SourceGPMSMActivity {
		t.Errorf("window %v from %q, want 0.375 from %q", f, src, SourceGPMSMActivity)
	}
	if n.allocs != 2 || n.frees != 2 {
		t.Errorf("%d GPM samples allocated, %d freed; want 2 and 2", n.allocs, n.frees)
	}
	s.Close()
	if n.shutdowns != 1 {
		t.Errorf("Close shut NVML down %d times, want 1", n.shutdowns)
	}
}

// Without GPM a window averages the utilization rate polled every
// PollInterval and once at its end: with a poll interval of an hour the
// window holds the end's poll only (40 % → 0.4, then 80 % → 0.8).
func TestSMSamplerUtilizationRates(t *testing.T) {
	n := newSMNVML(false, 0)
	s, err := NewSMSamplerFrom(n.lib, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.GPM() {
		t.Fatal("a GPU without GPM support is sampled with it")
	}
	s.PollInterval = time.Hour
	for _, c := range []struct {
		util uint32
		want float64
	}{{40, 0.4}, {80, 0.8}} {
		n.util = c.util
		if f, src := s.StartWindow()(); f != c.want || src != SourceUtilization {
			t.Errorf("utilization %d %%: window %v from %q, want %v from %q", c.util, f, src, c.want, SourceUtilization)
		}
	}
	if n.allocs != 0 {
		t.Errorf("%d GPM samples allocated without GPM", n.allocs)
	}
}

// A metric the driver cannot compute gives nothing, not a zero reading
// from a named source.
func TestSMSamplerGPMFailure(t *testing.T) {
	n := newSMNVML(true, 50)
	n.lib.GpmMetricsGetFunc = func(*nvml.GpmMetricsGetType) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
	s, err := NewSMSamplerFrom(n.lib, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.GPMMinWindow = 0
	if f, src := s.StartWindow()(); f != 0 || src != "" {
		t.Errorf("failed metric: %v from %q, want nothing", f, src)
	}
	if n.allocs != n.frees {
		t.Errorf("%d GPM samples allocated, %d freed", n.allocs, n.frees)
	}
}

// A window shorter than GPM's minimum interval between samples is not
// read from GPM (the H200 answered 0 % for every 1–15 ms window): it
// reports the utilization rate, named as such (60 % → 0.6), and still
// frees both GPM samples.
func TestSMSamplerGPMShortWindow(t *testing.T) {
	n := newSMNVML(true, 37.5)
	n.util = 60
	metrics := 0
	get := n.lib.GpmMetricsGetFunc
	n.lib.GpmMetricsGetFunc = func(m *nvml.GpmMetricsGetType) nvml.Return { metrics++; return get(m) }
	s, err := NewSMSamplerFrom(n.lib, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.GPMMinWindow != 100*time.Millisecond {
		t.Errorf("GPM minimum window %v, want NVML's 100 ms", s.GPMMinWindow)
	}
	s.GPMMinWindow = time.Hour // every window of the test is shorter
	if f, src := s.StartWindow()(); f != 0.6 || src != SourceUtilization {
		t.Errorf("short window: %v from %q, want 0.6 from %q", f, src, SourceUtilization)
	}
	if metrics != 0 {
		t.Errorf("a short window asked GPM for %d metrics", metrics)
	}
	if n.allocs != 2 || n.frees != 2 {
		t.Errorf("%d GPM samples allocated, %d freed; want 2 and 2", n.allocs, n.frees)
	}
	n.lib.GpmMetricsGetFunc = get
	n.dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_UNKNOWN }
	if f, src := s.StartWindow()(); f != 0 || src != "" {
		t.Errorf("short window, no utilization rate: %v from %q, want nothing", f, src)
	}
}

func TestSMSamplerErrors(t *testing.T) {
	n := newSMNVML(true, 0)
	if _, err := NewSMSamplerFrom(n.lib, 3); err == nil || !strings.Contains(err.Error(), "nvml: GPU 3: Invalid Argument") {
		t.Errorf("GPU 3 of one: %v", err)
	}
	if n.shutdowns != 1 {
		t.Errorf("a failed open shut NVML down %d times, want 1", n.shutdowns)
	}
	n.lib.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	if _, err := NewSMSamplerFrom(n.lib, 0); err == nil || !strings.Contains(err.Error(), "nvml: init: NVML Shared Library Not Found") {
		t.Errorf("no library: %v", err)
	}
}
