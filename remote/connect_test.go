package remote

import (
	"strings"
	"testing"
)

func TestConnectOptionsCheck(t *testing.T) {
	both := ConnectOptions{Server: "h:1", Spawn: true}
	if err := both.Check("remote", false, "--mode kv"); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("both: %v", err)
	}
	none := ConnectOptions{}
	if err := none.Check("resume", true, "--strategies stateful"); err == nil ||
		err.Error() != "resume: --strategies stateful needs a server: --server HOST:PORT or --spawn-server" {
		t.Errorf("none, needed: %v", err)
	}
	if err := none.Check("remote", false, "--mode local"); err != nil {
		t.Errorf("none, not needed: %v", err)
	}
}

func TestMeasureNeedsConfig(t *testing.T) {
	if _, _, err := Measure(t.Context(), MeasureOptions{Mode: "all"}, nil); err == nil || !strings.Contains(err.Error(), "--config is required") {
		t.Errorf("err = %v", err)
	}
	if _, err := ParseModes("bogus"); err == nil || !strings.Contains(err.Error(), "--mode") {
		t.Errorf("ParseModes(bogus) = %v", err)
	}
}
