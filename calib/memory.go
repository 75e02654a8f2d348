package calib

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"gonum.org/v1/gonum/blas/blas32"
)

// Cache curve constants.
const (
	// curveMinBytes is the smallest working set of the curve (inside any L1d).
	curveMinBytes = 16 << 10
	// curveTopBytes is the largest working set when the last-level cache is
	// not known: 256 MiB is 4× the largest L3 a CPU core of this class shares
	// (64 MiB), so every pass streams from memory.
	curveTopBytes = 256 << 20
	// reusePays is the bandwidth, relative to streaming, above which a cache
	// level counts as paying for reuse.
	reusePays = 1.25
)

// curveSizes are the working sets of the curve: curveMinBytes × 2^(k/2) up
// to top, each a multiple of 128 bytes (two halves of whole cache lines).
func curveSizes(top int64) []int64 {
	var out []int64
	for k := 0; ; k++ {
		s := int64(float64(curveMinBytes)*math.Pow(2, float64(k)/2)) &^ 127
		if s > top {
			break
		}
		out = append(out, s)
	}
	return out
}

// readPass loads every element of buf once: blas32.Dot of its two halves,
// which runs gonum's SSE kernel f32.DotUnitary (the family of kernels the
// CPU backend's sgemm runs its inner loops in).
func readPass(buf []float32) float32 {
	h := len(buf) / 2
	return blas32.Dot(blas32.Vector{N: h, Inc: 1, Data: buf[:h]}, blas32.Vector{N: h, Inc: 1, Data: buf[h : 2*h]})
}

// reuseBandwidth is the read bandwidth of buf read again and again (after
// one warm-up pass): bytes per second.
func reuseBandwidth(buf []float32, minDur time.Duration) float64 {
	var acc float32
	t := timePer(minDur, func() { acc += readPass(buf) })
	runtime.KeepAlive(acc)
	return float64(4*(len(buf)/2*2)) / t
}

// streamBandwidth is the read bandwidth of n bytes that are not in any cache:
// each pass reads the next n bytes of big (cyclically), so a region is read
// again only after all of big has been, and big ≫ the last-level cache.
func streamBandwidth(big []float32, n int64, minDur time.Duration) float64 {
	elems := int(n/4) &^ 1
	if elems > len(big) {
		elems = len(big) &^ 1
	}
	regions := len(big) / elems
	i := 0
	var acc float32
	t := timePer(minDur, func() {
		acc += readPass(big[i*elems : (i+1)*elems])
		i = (i + 1) % regions
	})
	runtime.KeepAlive(acc)
	return float64(4*elems) / t
}

// fillBuffer writes every element, so the pages are mapped before timing.
func fillBuffer(n int64) []float32 {
	buf := make([]float32, n/4)
	for i := range buf {
		buf[i] = float32(i&1023) * 1e-3
	}
	return buf
}

// curveRepeat is one pass over the curve: the bandwidth at each size.
type curveRepeat []float64

// streamPoints is how many of the curve's largest working sets count as
// streaming: with the top at 4× the last-level cache they are 2×, 2.8× and
// 4× it, so every pass evicts itself.
const streamPoints = 3

// cacheFigures reads one repeat of the curve. The streaming bandwidth is the
// median of the streamPoints largest working sets. The last-level cache
// that pays is the largest working set below those whose bandwidth is at
// least reusePays × streaming (scanning down from the top, so a dip at a
// small size, a neighbour's burst on a shared machine, does not end the
// cache early); its bandwidth is the median of the sizes in (l2/4, l2].
func cacheFigures(sizes []int64, bw curveRepeat) (stream float64, l2 int64, l2bw float64, err error) {
	n := len(sizes)
	if n < streamPoints+1 || len(bw) != n {
		return 0, 0, 0, fmt.Errorf("cache curve: need at least %d sizes (got %d)", streamPoints+1, n)
	}
	stream = medianOf(bw[n-streamPoints:])
	last := -1
	for i := n - streamPoints - 1; i >= 0; i-- {
		if bw[i] >= reusePays*stream {
			last = i
			break
		}
	}
	if last < 0 {
		return stream, sizes[0], bw[0], fmt.Errorf("cache curve: no working set read ≥ %.2f× faster than the streaming %.3g B/s", reusePays, stream)
	}
	l2 = sizes[last]
	var in []float64
	for i := 0; i <= last; i++ {
		if sizes[i] > l2/4 {
			in = append(in, bw[i])
		}
	}
	return stream, l2, medianOf(in), nil
}
