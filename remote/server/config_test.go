package server

import (
	"context"
	"strings"
	"testing"
)

// TestMaxSessionStreamsSetting: ServerConfig.MaxSessionStreams takes its
// default when zero, is kept from 1 to MaxSessionStreamsLimit, and is
// refused outside, naming the setting, the value and the range.
func TestMaxSessionStreamsSetting(t *testing.T) {
	for _, c := range []struct {
		in, want int // want 0: refused
	}{
		{0, DefaultMaxSessionStreams},
		{1, 1},
		{MaxSessionStreamsLimit, MaxSessionStreamsLimit},
		{-1, 0},
		{MaxSessionStreamsLimit + 1, 0},
	} {
		s, err := NewServer(ServerConfig{MaxSessionStreams: c.in}, NewCPUEngine())
		if c.want == 0 {
			if err == nil || !strings.Contains(err.Error(), "max session streams") || !strings.Contains(err.Error(), "must be 1 to 256") {
				t.Errorf("MaxSessionStreams %d: %v, want an error naming the setting and 1 to 256", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("MaxSessionStreams %d: %v", c.in, err)
			continue
		}
		if s.cfg.MaxSessionStreams != c.want {
			t.Errorf("MaxSessionStreams %d: the server holds %d, want %d", c.in, s.cfg.MaxSessionStreams, c.want)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
}
