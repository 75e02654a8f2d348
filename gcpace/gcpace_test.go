package gcpace

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// Percent by hand, Headroom 64 MiB: its cap is 100·64/4 = 1,600.
func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live int64
		want int
	}{
		{0, 1600},           // unknown live heap: the cap
		{1 * mib, 1600},     // 100·64/1 = 6,400, capped at 1,600
		{16 * mib, 400},     // 100·64/16
		{40 * mib, 160},     // 100·64/40
		{64 * mib, 100},     // 100·64/64
		{1024 * mib, 100},   // a large heap keeps the default
		{3 * mib / 2, 1600}, // 100·64/1.5 = 4,266: capped
		{48 * mib, 133},     // 100·64/48 = 133.3, rounded down
	} {
		if got := Percent(c.live, Headroom); got != c.want {
			t.Errorf("live %d B: %d, want %d", c.live, got, c.want)
		}
	}
}

// Apply sets the percent its note states and leaves a GOGC from the
// environment alone.
func TestApply(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if _, ok := os.LookupEnv("GOGC"); ok {
		t.Skip("GOGC is set in this test's environment")
	}
	note := Apply(Headroom)
	got := debug.SetGCPercent(100)
	if got < 100 || got > 1600 || !strings.Contains(note, "GOGC=") {
		t.Fatalf("Apply: percent %d, note %q", got, note)
	}
	if !strings.Contains(note, "GOGC="+strconv.Itoa(got)+" ") {
		t.Errorf("note %q does not state the percent set, %d", note, got)
	}
	t.Setenv("GOGC", "250")
	debug.SetGCPercent(100)
	if note := Apply(Headroom); !strings.Contains(note, "GOGC=250 from the environment") || debug.SetGCPercent(100) != 100 {
		t.Errorf("with GOGC=250 set: note %q, or the percent changed", note)
	}
}
