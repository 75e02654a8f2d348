package topology

import (
	"math"
	"strings"
	"testing"
)

func TestClientLinkPresets(t *testing.T) {
	// Payload rates by hand: Ethernet line rate / 8 × 1448/1538; NDR 50e9 × 4096/4122.
	//   10 GbE:  1.25e9 × 0.941482… = 1,176,853,056.0 B/s
	//   25 GbE:  3.125e9 × 0.941482… = 2,942,132,640.0 B/s
	//   100 GbE: 12.5e9 × 0.941482… = 11,768,530,559.2 B/s
	//   NDR 400: 50e9 × 0.993692… = 49,684,619,117.9 B/s
	for _, tc := range []struct {
		name string
		want float64
	}{{"10gbe", 1_176_853_055.9}, {"25gbe", 2_942_132_639.8}, {"100gbe", 11_768_530_559.2}, {"ndr400", 49_684_619_116.9}, {"loopback", 3.9e9}} {
		l, err := ParseClientLink("--remote-link", tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(l.BytesPerS-tc.want) > 1 {
			t.Errorf("%s: %.1f B/s, want %.1f", tc.name, l.BytesPerS, tc.want)
		}
		if l.Source == "" || l.Validate(tc.name) != nil {
			t.Errorf("%s: no source or invalid: %+v", tc.name, l)
		}
	}
}

func TestClientLinkInline(t *testing.T) {
	l, err := ParseClientLink("--remote-link", "bytes_per_s=2e9,latency_s=5e-6")
	if err != nil || l.BytesPerS != 2e9 || l.LatencyS != 5e-6 {
		t.Fatalf("inline: %+v, %v", l, err)
	}
	for _, tc := range []struct{ spec, want string }{
		{"40gbe", "not a link preset"},
		{"bytes_per_s=2e9", "needs both"},
		{"bytes_per_s=x,latency_s=1", `bytes_per_s="x" is not a number`},
		{"bytes_per_s=1e9,latency_s=1e-6,mtu=9000", `unknown key "mtu"`},
		{"bytes_per_s=0,latency_s=1e-6", "bytes_per_s: must be a positive"},
		// 1e-300 B/s priced every remote mode at +Inf.
		{"bytes_per_s=1e-300,latency_s=1e-6", "bytes_per_s: must be a positive finite number in [1000, 1e+15] B/s (got 1e-300)"},
		{"bytes_per_s=inf,latency_s=1e-6", "(got +Inf)"},
		{"bytes_per_s=1e9,latency_s=-1", "latency_s: must be in [0, 1]"},
	} {
		_, err := ParseClientLink("--remote-link", tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--remote-link") {
			t.Errorf("%q: error %v, want it to name the flag and contain %q", tc.spec, err, tc.want)
		}
	}
}
