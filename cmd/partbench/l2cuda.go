package main

import (
	"fmt"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/backend"
)

// cudaL2Probe is `l2 --measure --backend cuda`'s probe: the registry's cuda
// L2 probe (exec/cuda's L2Probe) on GPU 0 behind the CPU probe's interface
// (each working-set size measured once). Reuse is the back-to-back read
// without a window, WindowBytesPerS the same with the persisting-L2
// access-policy window; Ratio is without the window, as on the CPU. A failed
// measurement is kept and returned by err after the run; close frees the
// probe. Without a driver the error names it, as `run --backend cuda` does.
func cudaL2Probe(reg *backend.Registry, quick bool) (probe func(int64) calib.Reuse, err func() error, close func(), _ error) {
	if e := reg.Available(configs.BackendCUDA); e != nil {
		return nil, nil, nil, fmt.Errorf("l2 --measure --backend cuda: the GPU backend cannot run here: %w", e)
	}
	o := backend.L2ProbeOptions{}
	if quick {
		o.Reads, o.Repeats = 5, calib.QuickRepeats
	}
	p, e := reg.L2Probe(configs.BackendCUDA, o)
	if e != nil {
		return nil, nil, nil, fmt.Errorf("l2 --measure --backend cuda: %w", e)
	}
	var first error
	probed := map[int64]calib.Reuse{}
	probe = func(bytes int64) calib.Reuse {
		if m, ok := probed[bytes]; ok {
			return m
		}
		r, e := p.Reuse(bytes)
		if e != nil && first == nil {
			first = fmt.Errorf("l2 --measure --backend cuda: working set of %d B: %w", bytes, e)
		}
		m := CUDAReuse(bytes, r)
		probed[bytes] = m
		return m
	}
	return probe, func() error { return first }, func() { p.Close() }, nil
}

// CUDAReuse is the GPU probe's figures in the CPU probe's terms.
func CUDAReuse(bytes int64, r backend.L2Reuse) calib.Reuse {
	m := calib.Reuse{Bytes: bytes, MeasuredBytes: max(bytes, 128) &^ 127, ReuseBytesPerS: r.ReuseBytesPerS,
		StreamBytesPerS: r.StreamBytesPerS, WindowBytesPerS: r.WindowBytesPerS}
	if r.StreamBytesPerS > 0 {
		m.Ratio = r.ReuseBytesPerS / r.StreamBytesPerS
		m.WindowRatio = r.WindowBytesPerS / r.StreamBytesPerS
	}
	return m
}
