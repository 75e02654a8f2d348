package topology

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ClientLink is the network path between a client without the model's GPU
// and the GPU server that runs it (remote modes). BytesPerS is the payload
// rate one TCP stream reaches per direction (line rate less framing);
// LatencyS is one message's one-way latency through the kernel stack.
type ClientLink struct {
	Name      string  `toml:"name" json:"name"`
	BytesPerS float64 `toml:"bytes_per_s" json:"bytes_per_s"`
	LatencyS  float64 `toml:"latency_s" json:"latency_s"`
	Source    string  `toml:"-" json:"source,omitempty"`
}

// Ethernet at MTU 1500 carries 1,448 B of TCP payload (1,500 − 20 IP − 20 TCP
// − 12 timestamp option) in 1,538 B of line time (+ 14 header, 4 FCS,
// 8 preamble, 12 inter-frame gap): IEEE 802.3 clause 3/4 framing, RFC 7323
// timestamps.
const ethernetTCPPayloadFraction = 1448.0 / 1538.0

// InfiniBand at MTU 4,096 carries 4,096 B of payload in 4,122 B of packet
// (LRH 8 + BTH 12 + ICRC 4 + VCRC 2): IBTA InfiniBand Architecture
// Specification vol. 1, chapter 5 (packet format).
const infinibandPayloadFraction = 4096.0 / 4122.0

func ethernet(lineBitsPerS float64) float64 { return lineBitsPerS / 8 * ethernetTCPPayloadFraction }

// ClientLinks are the presets by name.
var ClientLinks = map[string]ClientLink{
	// Measured on the development machine (2-core shared VM, Linux 6.18,
	// Go 1.26): a plain TCP socket copy of 2 GiB in 1 MiB writes over
	// 127.0.0.1 ran at 3.44 and 4.37 GB/s in two runs (≈ 3.9 GB/s); a
	// 1-byte ping-pong averaged 4.0 µs round trip over 20,000 exchanges
	// (2 µs one-way). remote's BenchmarkTCPCopy re-measures the copy.
	"loopback": {Name: "loopback (127.0.0.1, measured)", BytesPerS: 3.9e9, LatencyS: 2e-6,
		Source: "measured: TCP socket copy and 1-byte ping-pong over 127.0.0.1, 2-core VM"},
	// 10 Gb/s Ethernet: IEEE 802.3ae-2002. Latency: a kernel TCP one-way
	// time of about 10 µs on a direct link, the order of the kernel-stack
	// baseline that AMD's Onload user guide UG1586 ("Latency for TCP
	// Payloads at 10 Gb") compares against; an assumption, not measured
	// here: calibrate a real link and pass it inline.
	"10gbe": {Name: "10 Gb/s Ethernet (TCP)", BytesPerS: ethernet(10e9), LatencyS: 10e-6,
		Source: "IEEE 802.3ae-2002 line rate; AMD UG1586 kernel TCP latency"},
	// 25 Gb/s Ethernet: IEEE 802.3by-2016; same kernel stack cost, shorter
	// serialization of a small frame.
	"25gbe": {Name: "25 Gb/s Ethernet (TCP)", BytesPerS: ethernet(25e9), LatencyS: 8e-6,
		Source: "IEEE 802.3by-2016 line rate; AMD UG1586 kernel TCP latency"},
	// 100 Gb/s Ethernet: IEEE 802.3ba-2010 (100GBASE-SR4/CR4).
	"100gbe": {Name: "100 Gb/s Ethernet (TCP)", BytesPerS: ethernet(100e9), LatencyS: 6e-6,
		Source: "IEEE 802.3ba-2010 line rate; AMD UG1586 kernel TCP latency"},
	// NDR InfiniBand, 400 Gb/s per port (4 lanes × 100 Gb/s PAM4): IBTA
	// specification release 1.5 and NVIDIA ConnectX-7 datasheet; RDMA
	// one-way latency about 1 µs (ConnectX-7 datasheet: sub-microsecond
	// adapter latency, plus a Quantum-2 switch hop).
	"ndr400": {Name: "NDR InfiniBand 400 Gb/s (RDMA)", BytesPerS: 400e9 / 8 * infinibandPayloadFraction, LatencyS: 1e-6,
		Source: "IBTA spec 1.5 NDR rate, 4096 B MTU framing; NVIDIA ConnectX-7 datasheet latency"},
}

// ClientLinkNames lists the presets in order.
func ClientLinkNames() []string {
	names := make([]string, 0, len(ClientLinks))
	for n := range ClientLinks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParseClientLink reads a preset name or inline values
// "bytes_per_s=3e9,latency_s=20e-6" (both keys required). field names the
// flag or config key in errors.
func ParseClientLink(field, spec string) (ClientLink, error) {
	if l, ok := ClientLinks[spec]; ok {
		return l, nil
	}
	if !strings.Contains(spec, "=") {
		return ClientLink{}, fmt.Errorf("%s %q: not a link preset (presets: %s) nor inline bytes_per_s=…,latency_s=…",
			field, spec, strings.Join(ClientLinkNames(), ", "))
	}
	l := ClientLink{Name: "inline " + spec, Source: "given"}
	seen := map[string]bool{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return ClientLink{}, fmt.Errorf("%s %q: %s=%q is not a number", field, spec, k, v)
		}
		switch k {
		case "bytes_per_s":
			l.BytesPerS = f
		case "latency_s":
			l.LatencyS = f
		default:
			return ClientLink{}, fmt.Errorf("%s %q: unknown key %q (allowed: bytes_per_s, latency_s)", field, spec, k)
		}
		seen[k] = true
	}
	if !seen["bytes_per_s"] || !seen["latency_s"] {
		return ClientLink{}, fmt.Errorf("%s %q: inline link needs both bytes_per_s and latency_s", field, spec)
	}
	return l, l.Validate(field)
}

// Validate checks a link's numbers; field names it in errors.
func (l ClientLink) Validate(field string) error {
	// The range topology links have in configs (configs/validate.go): below
	// it a transfer's time overflows (bytes_per_s = 1e-300 priced every
	// mode at +Inf).
	if !(l.BytesPerS >= 1e3 && l.BytesPerS <= 1e15) {
		return fmt.Errorf("%s.bytes_per_s: must be a positive finite number in [1000, 1e+15] B/s (got %g)", field, l.BytesPerS)
	}
	if !(l.LatencyS >= 0) || l.LatencyS > 1 {
		return fmt.Errorf("%s.latency_s: must be in [0, 1] seconds (got %g)", field, l.LatencyS)
	}
	return nil
}
