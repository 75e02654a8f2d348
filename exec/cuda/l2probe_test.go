//go:build cgo

package cuda

import (
	"errors"
	"fmt"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/cuda/cudatest"
)

// The probe on the fakes: the kernel compiles (fake NVRTC) and loads, each
// sample's reads are launched, the window crosses to the driver over the
// working set, and the figures follow from the fake's clock, which puts
// every event record 0.25 ms after the last: a sample of 3 reads of 1 MiB
// is 3 × 1,048,576 B / 0.25 ms = 1.2582912e10 B/s for all three kinds.
// Launches: per repeat one warm read + 3 timed, one warm + 3 timed with
// the window, 3 streaming: 11; two repeats, 22.
func TestL2ProbeOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	p, err := NewL2Probe(L2ProbeOptions{ColdBytes: 3 << 20, Reads: 3, Repeats: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	counts := func() map[string]int {
		m, err := cudatest.Counters(p.drv.ErrorName(cuda.Result(cudatest.Trace)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := counts()["launches"]
	r, err := p.Reuse(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if got := counts()["launches"] - before; got != 22 {
		t.Errorf("%d launches, want 22", got)
	}
	const want = 3 * 1048576 / 0.25e-3
	for name, v := range map[string]float64{"reuse": r.ReuseBytesPerS, "window": r.WindowBytesPerS, "stream": r.StreamBytesPerS} {
		if v != want {
			t.Errorf("%s %g B/s, want %g", name, v, want)
		}
	}
	// The fake's max persisting L2 is 75 MiB and its largest window 128 MiB −
	// 4 KiB: a 1 MiB working set is all window, all set aside, hit ratio 1.
	if r.WindowBytes != 1<<20 || r.PersistingL2Bytes != 1<<20 || r.HitRatio != 1 {
		t.Errorf("window %d B, set-aside %d B, hit ratio %g; want 1 MiB, 1 MiB, 1", r.WindowBytes, r.PersistingL2Bytes, r.HitRatio)
	}
	// A working set larger than the set-aside: 100 MiB → window 100 MiB,
	// set-aside 78,643,200 B, hit ratio 0.75; the window's fields cross in
	// place (the fake's trace of cuStreamSetAttribute).
	unpin, err := p.ctx.Pin()
	if err != nil {
		t.Fatal(err)
	}
	o := L2Reuse{WindowBytes: min(100<<20, p.maxWin)}
	o.PersistingL2Bytes = min(o.WindowBytes, p.info.MaxPersistingL2Bytes)
	o.HitRatio = float32(float64(o.PersistingL2Bytes) / float64(o.WindowBytes))
	if err := p.setWindow(0x7f0000000000, o); err != nil {
		t.Fatal(err)
	}
	tr := p.drv.ErrorString(cuda.Result(cudatest.Trace))
	unpin()
	if wantTr := fmt.Sprintf("cuStreamSetAttribute(attr=1, base=0x7f0000000000, bytes=%d, hitRatio=0.75, hitProp=2, missProp=1)", 100<<20); tr != wantTr {
		t.Errorf("trace %q\nwant  %q", tr, wantTr)
	}
}

// A driver without the persisting-L2 controls is refused by name.
func TestL2ProbeWithoutL2Controls(t *testing.T) {
	cudatest.Build(t, "FAKE_NO_L2").Setenv(t)
	if _, err := NewL2Probe(L2ProbeOptions{}); !errors.Is(err, cuda.ErrNoL2Policy) {
		t.Errorf("NewL2Probe without the controls: %v", err)
	}
}
