package remote

import (
	"testing"

	"github.com/partbench/partbench/remote/wire"
)

// meter is an ActivityMeter that reports fixed readings, one per window.
type meter struct {
	readings []float64
	opened   int
}

func (m *meter) StartWindow() func() (float64, string) {
	i := m.opened
	m.opened++
	return func() (float64, string) { return m.readings[i], "test-meter" }
}

// Activity hands each window's reading and source through as wire.Utilization,
// window by window.
func TestActivityIsAUtilSampler(t *testing.T) {
	m := &meter{readings: []float64{0.25, 0.75}}
	var s wire.UtilSampler = Activity{Meter: m}
	stop1 := s.Start()
	stop2 := s.Start()
	if u := stop2(); u != (wire.Utilization{Fraction: 0.75, Source: "test-meter"}) {
		t.Errorf("second window %+v", u)
	}
	if u := stop1(); u != (wire.Utilization{Fraction: 0.25, Source: "test-meter"}) {
		t.Errorf("first window %+v", u)
	}
}
