package calib

import (
	"testing"
	"time"
)

func TestMemoProbeMeasuresEachSizeOnce(t *testing.T) {
	probe := MemoProbe(ProbeOptions{ColdBytes: 4 << 20, Repeats: 1, MinSample: 50 * time.Microsecond})
	a := probe(64 << 10)
	b := probe(64 << 10)
	// A second measurement would carry its own timings; the memo returns
	// the first one, every field equal.
	if a != b || a.Bytes != 64<<10 || !(a.Ratio > 0) {
		t.Fatalf("first %+v, second %+v", a, b)
	}
	if c := probe(128 << 10); c.Bytes != 128<<10 {
		t.Errorf("another size: %+v", c)
	}
	if q := QuickProbeOptions(); q.Repeats != QuickRepeats || q.MinSample != 500*time.Microsecond {
		t.Errorf("quick options %+v", q)
	}
}
