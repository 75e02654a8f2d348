package calib

import (
	"fmt"

	"github.com/partbench/partbench/configs"

	"math"
	"time"
)

// Probe limits.
const (
	// ProbeMaxBytes is the largest working set the probe reads; a larger one
	// is measured at this size (far beyond any CPU cache, so it streams either way).
	ProbeMaxBytes = 256 << 20
	// DefaultProbeColdBytes is how many other bytes are read between two
	// reads of the same region in the streaming reference: more than any
	// last-level cache.
	DefaultProbeColdBytes = 256 << 20
)

// ProbeOptions configure ProbeReuse; zero values take the defaults.
type ProbeOptions struct {
	ColdBytes int64         // DefaultProbeColdBytes
	Repeats   int           // DefaultRepeats
	MinSample time.Duration // 2 ms
}

// Reuse is the measured effect of re-reading a working set: the bandwidth
// of reading it again and again against reading as many bytes that no cache
// holds. Ratio near 1 means the caches do not help; above 1 they do.
type Reuse struct {
	Bytes           int64   `json:"bytes"`          // the working set asked for
	MeasuredBytes   int64   `json:"measured_bytes"` // the working set read (≤ ProbeMaxBytes)
	ReuseBytesPerS  float64 `json:"reuse_bytes_per_s"`
	StreamBytesPerS float64 `json:"stream_bytes_per_s"`
	Ratio           float64 `json:"ratio"`
	// WindowBytesPerS and WindowRatio are the re-read with a persisting-L2
	// access-policy window over the working set (the GPU probe only).
	WindowBytesPerS float64 `json:"window_bytes_per_s,omitempty"`
	WindowRatio     float64 `json:"window_ratio,omitempty"`
}

// ProbeReuse measures a working set of bytes (at least 256 B): the median
// over repeats of its re-read bandwidth, and of the bandwidth of reading the
// same number of bytes cycling through a buffer ColdBytes larger.
func ProbeReuse(bytes int64, o ProbeOptions) Reuse {
	if o.ColdBytes <= 0 {
		o.ColdBytes = DefaultProbeColdBytes
	}
	if o.Repeats <= 0 {
		o.Repeats = DefaultRepeats
	}
	if o.MinSample <= 0 {
		o.MinSample = 2 * time.Millisecond
	}
	ws := probeBytes(bytes)
	big := fillBuffer(ws + o.ColdBytes)
	var re, st []float64
	for r := 0; r < o.Repeats; r++ {
		re = append(re, reuseBandwidth(big[:ws/4], o.MinSample))
		st = append(st, streamBandwidth(big, ws, o.MinSample))
	}
	out := Reuse{Bytes: bytes, MeasuredBytes: ws, ReuseBytesPerS: medianOf(re), StreamBytesPerS: medianOf(st)}
	out.Ratio = out.ReuseBytesPerS / out.StreamBytesPerS
	return out
}

// probeBytes is the working set the probe reads for bytes: at least 256 B,
// at most ProbeMaxBytes, a multiple of 128 B (two halves of whole lines).
func probeBytes(bytes int64) int64 { return min(max(bytes, 256), int64(ProbeMaxBytes)) &^ 127 }

// ImpliedResidency is the fraction f of a working set served from a cache of
// bandwidth cacheBytesPerS that explains the re-read bandwidth, when the
// rest streams: 1/reuse = f/cache + (1−f)/stream, so
// f = (1 − stream/reuse) / (1 − stream/cache), clamped to [0, 1]. ok is
// false when the cache is no faster than streaming.
func (r Reuse) ImpliedResidency(cacheBytesPerS float64) (f float64, ok bool) {
	den := 1 - r.StreamBytesPerS/cacheBytesPerS
	if !(den > 0) {
		return 0, false
	}
	return math.Min(1, math.Max(0, (1-r.StreamBytesPerS/r.ReuseBytesPerS)/den)), true
}

// QuickProbeOptions are the probe's options for a quick pass: fewer repeats
// and shorter samples.
func QuickProbeOptions() ProbeOptions {
	return ProbeOptions{Repeats: QuickRepeats, MinSample: 500 * time.Microsecond}
}

// MemoProbe returns a probe that measures each working-set size once with
// ProbeReuse and answers again from memory (ranks often share a size). It
// is not safe for concurrent use.
func MemoProbe(o ProbeOptions) func(bytes int64) Reuse {
	probed := map[int64]Reuse{}
	return func(bytes int64) Reuse {
		m, ok := probed[bytes]
		if !ok {
			m = ProbeReuse(bytes, o)
			probed[bytes] = m
		}
		return m
	}
}

// CheckProbeBackend says whether ProbeReuse can stand for backend's memory:
// cpu only (the GPU probe is exec/cuda.L2Probe).
// Errors name the --backend flag.
func CheckProbeBackend(backend string) error {
	switch backend {
	case configs.BackendCPU:
		return nil
	case configs.BackendCUDA:
		return fmt.Errorf("--backend cuda: this probe reads host memory; the GPU's is exec/cuda's L2Probe (partbench l2 --measure --backend cuda)")
	}
	return fmt.Errorf("--backend: must be cpu or cuda (got %q)", backend)
}
