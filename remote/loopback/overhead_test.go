package loopback

import (
	"strings"
	"testing"
)

// TestMeasureRequestOverhead: the samples are stateful decode requests of
// the tiny config over both transports, as many as asked (test/single-tiny
// makes 3 decode requests per generation, so 7 needs three sessions), each
// positive: a loopback round trip costs more than the loopback link's own
// 2 × 2 µs and 32 B.
func TestMeasureRequestOverhead(t *testing.T) {
	for _, tr := range []string{"grpc", "tcp"} {
		xs, err := MeasureRequestOverhead(t.Context(), tr, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(xs) != 7 {
			t.Fatalf("%s: %d samples, want 7", tr, len(xs))
		}
		for i, x := range xs {
			if !(x > 0) {
				t.Errorf("%s sample %d: %g s", tr, i, x)
			}
		}
	}
	if _, err := MeasureRequestOverhead(t.Context(), "udp", 1); err == nil || !strings.Contains(err.Error(), `transport "udp"`) {
		t.Errorf("transport udp: %v", err)
	}
}
