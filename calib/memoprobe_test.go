package calib

import (
	"testing"
	"time"
)

func TestMemoProbeMeasuresEachSizeOnce(t *testing.T) {
	probe := MemoProbe(ProbeOptions{ColdBytes: 4 << 20, Repeats: 1, MinSample: 50 * time.Microsecond})
	a := probe(64 << 10)
	b := probe(64 << 10)
	// A second measurement would carry its own timings; the memo returns
	// the first one, every field equal.
	if a != b || a.Bytes != 64<<10 || !(a.Ratio > 0) {
		t.Fatalf("first %+v, second %+v", a, b)
	}
	if c := probe(128 << 10); c.Bytes != 128<<10 {
		t.Errorf("another size: %+v", c)
	}
	if q := QuickProbeOptions(); q.Repeats != QuickRepeats || q.MinSample != 500*time.Microsecond {
		t.Errorf("quick options %+v", q)
	}
}

func TestCheckProbeBackend(t *testing.T) {
	if err := CheckProbeBackend("cpu"); err != nil {
		t.Errorf("cpu: %v", err)
	}
	for b, want := range map[string]string{
		"cuda": "--backend cuda: this probe reads host memory; the GPU's is exec/cuda's L2Probe (partbench l2 --measure --backend cuda)",
		"tpu":  `--backend: must be cpu or cuda (got "tpu")`,
	} {
		if err := CheckProbeBackend(b); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", b, err, want)
		}
	}
}
