package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
)

func TestWriteCalibrationRoundTrips(t *testing.T) {
	cal := &configs.Calibration{
		Hardware: topology.GPU{Name: "cpu:test", FP32FLOPsPerS: 1.5e10, FP16FLOPsPerS: 1.5e10, BF16FLOPsPerS: 1.5e10,
			HBMBytes: 24 << 30, HBMReservedBytes: 2 << 30, HBMBytesPerS: 4.4e10, L2Bytes: 32 << 20, L2UsableFraction: 1,
			L2BytesPerS: 6.9e10, SMs: 2, KernelLaunchS: 1.5e-7, ComputeEfficiency: 1, HBMEfficiency: 1},
		Topology: topology.Topology{Name: "cpu-loopback-4", Nodes: 1, GPUsPerNode: 4,
			Intra: topology.Link{Class: topology.Network, Name: "TCP over loopback", BytesPerS: 3e8, LatencyS: 30e-6}},
		Info: configs.CalibrationInfo{Host: "h1", Backend: configs.BackendCPU, Ranks: 4, Repeats: 5, Date: "2026-01-01T00:00:00Z", Version: "v9"},
	}
	p := filepath.Join(t.TempDir(), "calib.toml")
	if err := WriteCalibration(p, cal); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || !strings.HasPrefix(string(b), "# partbench calibration: host h1, backend cpu, date 2026-01-01T00:00:00Z, partbench version v9\n# Load it with --calibration FILE") {
		t.Fatalf("%v\n%s", err, b)
	}
	got, err := configs.LoadCalibration(p)
	if err != nil || got.Hardware != cal.Hardware || got.Topology.Intra != cal.Topology.Intra || got.Info.Host != "h1" {
		t.Errorf("round trip: %v\n%+v", err, got)
	}
}
