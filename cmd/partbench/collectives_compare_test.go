package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/report"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/topologytest"
)

const measuredAllReduce8 = "../../nccltests/testdata/all_reduce_8.txt"

func writeCollectivesCompare(t *testing.T, format string, files ...string) string {
	t.Helper()
	t.Setenv("NCCL_ALGO", "")
	t.Setenv("NCCL_PROTO", "")
	a := collectivesArgs{Measured: files, Format: format, Topology: "dgx-h100x2", Hardware: "h100-sxm"}
	var out bytes.Buffer
	resolve := func(string, string) (topology.System, error) { return topologytest.DGXH100(2), nil }
	if err := a.Write(&out, resolve, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// The modeled side is sim.Collective for the file's collective, size and
// ranks (0..7) on the same system, plus nccl-tests' host launch (the file
// ran one GPU per thread without graphs: h = 8.85 + 0.46 = 9.31 µs, less
// 0.6 × the GPU time above its one-element floor t₀, never below 0); the
// error is (modeled − measured) / measured out-of-place busbw.
func TestCollectivesCompareJSON(t *testing.T) {
	var doc struct {
		Schema string                      `json:"schema"`
		Files  []compare.CollectiveCompare `json:"files"`
	}
	if err := json.Unmarshal([]byte(writeCollectivesCompare(t, report.FormatJSON, measuredAllReduce8)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != report.CollectivesCompareSchema || len(doc.Files) != 1 {
		t.Fatalf("schema %q, %d files", doc.Schema, len(doc.Files))
	}
	c := doc.Files[0]
	if c.Op != commcount.AllReduce || c.Ranks != 8 || c.NCCLVersion != "2.29.2" || c.CUDAGraph || len(c.Rows) != 11 {
		t.Fatalf("file: %+v", c)
	}
	sys := topologytest.DGXH100(2)
	ranks := []int{0, 1, 2, 3, 4, 5, 6, 7}
	beyond := 0
	e0, err := sim.Collective(sys, commcount.AllReduce, ranks, 4, sim.CollectiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		e, err := sim.Collective(sys, commcount.AllReduce, ranks, r.SizeBytes, sim.CollectiveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.TimeS += math.Max(0, 9.31e-6-0.6*(e.TimeS-e0.TimeS))
		e.BusBWBytesPerS = float64(r.SizeBytes) / e.TimeS * 2 * 7 / 8
		if math.Abs(r.ModeledBusBWBytesPerS/e.BusBWBytesPerS-1) > 1e-12 || math.Abs(r.ModeledTimeS/e.TimeS-1) > 1e-12 || r.Algo != e.Algo || r.Proto != e.Proto {
			t.Errorf("%d B: modeled %v %v %s/%s, sim.Collective %v %v %s/%s", r.SizeBytes, r.ModeledBusBWBytesPerS, r.ModeledTimeS, r.Algo, r.Proto,
				e.BusBWBytesPerS, e.TimeS, e.Algo, e.Proto)
		}
		if r.SizeBytes >= 1<<20 && math.Abs(e.BusBWBytesPerS/(r.MeasuredBusBWBytesPerS)-1) > 0.15 {
			beyond++
		}
		if r.SizeBytes == 4<<20 {
			// The file's 4 MiB row: 4194304 B in 55.80 µs is 75.17 GB/s
			// algbw, × 2·7/8 = 131.54 GB/s busbw (printed), so the error is
			// (modeled − 131.54) / 131.54.
			want := (e.BusBWBytesPerS/1e9 - 131.54) / 131.54
			if math.Abs(r.MeasuredBusBWBytesPerS/131.54e9-1) > 1e-12 || math.Abs(r.MeasuredTimeS/55.80e-6-1) > 1e-12 || r.BusBWRelErr == nil || math.Abs(*r.BusBWRelErr-want) > 1e-12 {
				t.Errorf("4 MiB row: %+v, error want %v", r, want)
			}
		}
	}
	// 8 B prints busbw 0.00: no error; 1 KiB … 256 MiB have one. The bar
	// counts the nine sizes 1 MiB … 256 MiB.
	if c.Rows[0].BusBWRelErr != nil || c.Rows[1].BusBWRelErr == nil || c.BarPoints != 9 || c.BeyondBar != beyond || c.MedianAbsRelErr == nil {
		t.Errorf("errors: first %v, bar points %d, beyond %d (want %d), median %v", c.Rows[0].BusBWRelErr, c.BarPoints, c.BeyondBar, beyond, c.MedianAbsRelErr)
	}
}

func TestCollectivesCompareTableAndCSV(t *testing.T) {
	e, err := sim.Collective(topologytest.DGXH100(2), commcount.AllReduce, []int{0, 1, 2, 3, 4, 5, 6, 7}, 4<<20, sim.CollectiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := writeCollectivesCompare(t, report.FormatTable, measuredAllReduce8)
	row := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " 4194304 ") {
			row = l
		}
	}
	wantErr := fmt.Sprintf("%+.1f", 100*(e.BusBWBytesPerS/1e9-131.54)/131.54)
	for _, want := range []string{"55.80", "131.54", sim.NCCLAlgoName(topologytest.DGXH100(2).Topology, e.Algo) + "/" + e.Proto, fmt.Sprintf("%.2f", e.BusBWBytesPerS/1e9), wantErr} {
		if !strings.Contains(row, want) {
			t.Errorf("4 MiB row %q lacks %q", row, want)
		}
	}
	for _, want := range []string{"all_reduce_8.txt: all_reduce_perf, 8 ranks, float (nccl-tests 2.18.3, NCCL 2.29.2)",
		"8× NVIDIA H100 80GB HBM3 on 1 host (node-a)", "CUDA graphs: no (graph: 0)", "sizes ≥ 1 MiB: 9 points, median |error|"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Two files, comma-separated or repeated: one CSV, a file column.
	csvOut := writeCollectivesCompare(t, report.FormatCSV, measuredAllReduce8, "../../nccltests/testdata/all_gather_4_na.txt")
	lines := strings.Split(strings.TrimSpace(csvOut), "\n")
	if len(lines) != 1+11+21 || !strings.HasPrefix(lines[0], "file,op,ranks,size_bytes") || !strings.Contains(lines[12], "all_gather_4_na.txt,all_gather,4,16,") {
		t.Errorf("csv: %d lines\n%s", len(lines), csvOut)
	}
}
