package launchflags

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// MaxJoinTimeout bounds --join-timeout: ranks that have not met in a day
// never will.
const MaxJoinTimeout = 24 * time.Hour

// maxJobIDBytes bounds --rdzv-id, which every rank gets in its environment
// and sends to the rendezvous.
const maxJobIDBytes = 128

// Check refuses launcher flags of f (those it has) whose values cannot act:
// --join-timeout not in (0, 24h], --master-addr that is not a host name or
// an IP address, --rdzv-id empty, over 128 bytes or with spaces or control
// characters. Errors name the flag, the value and what is allowed. Commands
// call it before any work, so a launcher and each of its ranks refuse alike.
func Check(f *pflag.FlagSet) error {
	if fl := f.Lookup("join-timeout"); fl != nil {
		d, err := time.ParseDuration(fl.Value.String())
		if err == nil && (d <= 0 || d > MaxJoinTimeout) {
			return fmt.Errorf("--join-timeout: must be in (0s, %v] (got %v)", MaxJoinTimeout, d)
		}
	}
	if fl := f.Lookup("master-addr"); fl != nil && fl.Changed {
		if err := checkHost(fl.Value.String()); err != nil {
			return fmt.Errorf("--master-addr %q: %w", fl.Value.String(), err)
		}
	}
	if fl := f.Lookup("rdzv-id"); fl != nil && fl.Changed {
		id := fl.Value.String()
		switch {
		case id == "":
			return fmt.Errorf("--rdzv-id: must not be empty (leave it out for one derived from the rendezvous address)")
		case len(id) > maxJobIDBytes:
			return fmt.Errorf("--rdzv-id: at most %d bytes (got %d)", maxJobIDBytes, len(id))
		case strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
			return fmt.Errorf("--rdzv-id %q: no spaces or control characters", id)
		}
	}
	return nil
}

// checkHost accepts an IP address or a host name (RFC 1123 labels: letters,
// digits and '-', dot-separated, at most 253 bytes).
func checkHost(h string) error {
	if h == "" {
		return fmt.Errorf("empty: give node 0's host name or IP address")
	}
	if net.ParseIP(strings.Trim(h, "[]")) != nil {
		return nil
	}
	if len(h) > 253 {
		return fmt.Errorf("not a host name: more than 253 bytes")
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("not a host name or IP address (label %q)", label)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("not a host name or IP address (%q in %q)", c, label)
			}
		}
	}
	return nil
}
