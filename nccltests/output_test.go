package nccltests

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
)

func parseFile(t *testing.T, name string) *Output {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	o, err := ParseOutput(bytes.NewReader(b), name)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// testdata/all_reduce_8.txt: 8 ranks of one host under MPI (nGpus 1 per
// process), NCCL INFO lines among the header and the rows, 11 rows of
// sizes 8 B, 1 KiB, then 1 MiB … 256 MiB.
func TestParseOutputAllReduce(t *testing.T) {
	o := parseFile(t, "all_reduce_8.txt")
	if o.TestsVersion != "2.18.3" || o.HeadersCode != 22902 || o.LibraryCode != 22902 || VersionString(o.LibraryCode) != "2.29.2" {
		t.Errorf("versions: %q %d %d", o.TestsVersion, o.HeadersCode, o.LibraryCode)
	}
	if o.Binary != "all_reduce_perf" || o.Op != commcount.AllReduce {
		t.Errorf("binary %q op %q", o.Binary, o.Op)
	}
	if !o.HeaderSeen || o.NThread != 1 || o.NGPUs != 1 || o.Graph != 0 || o.Validation != 1 {
		t.Errorf("header: %+v", o)
	}
	// Eight "#  Rank" lines: 8 ranks, though nThread × nGpus is 1.
	if o.NRanks() != 8 || !reflect.DeepEqual(o.Hosts(), []string{"node-a"}) || !reflect.DeepEqual(o.GPUs(), []string{"NVIDIA H100 80GB HBM3"}) {
		t.Errorf("ranks %d hosts %v gpus %v", o.NRanks(), o.Hosts(), o.GPUs())
	}
	if r := o.Ranks[2]; r.Rank != 2 || r.Device != 2 || r.Bus != "0000:4c:00" {
		t.Errorf("rank 2: %+v", r)
	}
	if len(o.Rows) != 11 || o.AvgBusBWGBPerS != 196.38 {
		t.Fatalf("%d rows, avg %v; want 11, 196.38", len(o.Rows), o.AvgBusBWGBPerS)
	}
	// The 1 MiB row, as the file prints it (line 25: after 21 header and
	// INFO lines, the 8 B and 1 KiB rows and one more INFO line).
	want := Row{Line: 25, SizeBytes: 1 << 20, Count: 262144, Type: "float", Redop: "sum", Root: -1,
		OutOfPlace: Result{TimeUS: 31.40, AlgBWGBPerS: 33.39, BusBWGBPerS: 58.44, Wrong: 0},
		InPlace:    Result{TimeUS: 31.02, AlgBWGBPerS: 33.80, BusBWGBPerS: 59.16, Wrong: 0}}
	if !reflect.DeepEqual(o.Rows[2], want) {
		t.Errorf("1 MiB row:\n got %+v\nwant %+v", o.Rows[2], want)
	}
	if last := o.Rows[10]; last.SizeBytes != 256<<20 || last.OutOfPlace.BusBWGBPerS != 401.37 {
		t.Errorf("last row %+v", last)
	}
}

// testdata/all_gather_4_na.txt: mpirun --tag-output prefixes, validation
// off (#wrong N/A), CUDA graphs (graph: 1), two rows of size 0 (dropped).
func TestParseOutputAllGatherNA(t *testing.T) {
	o := parseFile(t, "all_gather_4_na.txt")
	if o.Op != commcount.AllGather || o.NRanks() != 4 || o.Graph != 1 || o.Validation != 0 || VersionString(o.LibraryCode) != "2.28.3" {
		t.Errorf("op %q ranks %d graph %d validation %d nccl %s", o.Op, o.NRanks(), o.Graph, o.Validation, VersionString(o.LibraryCode))
	}
	// 16 B … 16 MiB doubling: 21 rows; the two size-0 rows are gone.
	if len(o.Rows) != 21 || o.Rows[0].SizeBytes != 16 {
		t.Fatalf("%d rows, first %+v", len(o.Rows), o.Rows[0])
	}
	r := o.Rows[20]
	if r.Redop != "none" || r.Root != -1 || r.OutOfPlace.Wrong != -1 || r.InPlace.Wrong != -1 || r.InPlace.TimeUS != 121.7 {
		t.Errorf("16 MiB row %+v", r)
	}
}

func TestVersionString(t *testing.T) {
	// NCCL_VERSION(X,Y,Z): X*10000+Y*100+Z from 2.9, X*1000+Y*100+Z before.
	for code, want := range map[int]string{22902: "2.29.2", 21903: "2.19.3", 20906: "2.9.6", 2708: "2.7.8", 0: ""} {
		if got := VersionString(code); got != want {
			t.Errorf("VersionString(%d) = %q, want %q", code, got, want)
		}
	}
}

// A minimal valid file; the cases below break it one way each.
const miniHeader = "# nccl-tests version 2.18.3 nccl-headers=22902 nccl-library=22902\n" +
	"# Collective test starting: broadcast_perf\n" +
	"# nThread 1 nGpus 2 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"

const (
	miniRow1 = "        1024           256     float    none       0    12.00    0.09    0.09       0    11.90    0.09    0.09       0\n"
	miniRow2 = "        2048           512     float    none       0    12.50    0.16    0.16       0    12.40    0.17    0.17       0\n"
)

func TestParseOutputVariants(t *testing.T) {
	// No Rank lines: the rank count is nThread × nGpus (2); broadcast's
	// root is a number.
	o, err := ParseOutput(strings.NewReader(miniHeader+miniRow1+miniRow2), "mini.txt")
	if err != nil || o.NRanks() != 2 || o.Op != commcount.Broadcast || o.Rows[0].Root != 0 || len(o.Rows) != 2 {
		t.Fatalf("mini: %+v, %v", o, err)
	}
	// -R: a timestamp after the in-place half; CRLF line ends.
	ts := strings.TrimSuffix(miniRow1, "\n") + "  2025-03-01 10:11:12\r\n"
	if o, err := ParseOutput(strings.NewReader(miniHeader+ts), "ts.txt"); err != nil || len(o.Rows) != 1 || o.Rows[0].InPlace.Wrong != 0 {
		t.Errorf("timestamped row: %+v, %v", o, err)
	}
	// An unknown program parses; Op stays empty for the caller to refuse.
	a2a := strings.Replace(miniHeader, "broadcast_perf", "alltoall_perf", 1)
	if o, err := ParseOutput(strings.NewReader(a2a+miniRow1), "a2a.txt"); err != nil || o.Binary != "alltoall_perf" || o.Op != "" {
		t.Errorf("alltoall: %+v, %v", o, err)
	}
}

func TestParseOutputErrors(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "all_reduce_8.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Cut the 1 MiB row (line 25) after its out-of-place busbw: 8 fields.
	lines := strings.SplitAfter(string(full), "\n")
	cut := strings.Join(lines[:24], "") + strings.Join(strings.Fields(lines[24])[:8], "  ")
	for _, tc := range []struct{ name, in, want string }{
		{"truncated", cut, "trunc.txt:25: data row has 8 fields, want 13"},
		{"no rows", miniHeader + "#\n# Out of bounds values : 0 OK\n", "no-rows.txt: no data rows of nonzero size"},
		{"only size 0", miniHeader + strings.Replace(miniRow1, "        1024           256", "           0             0", 1), "zero.txt: no data rows"},
		{"bad busbw", miniHeader + strings.Replace(miniRow1, "0.09       0    11.90", "abc       0    11.90", 1), `bad.txt:4: busbw (out-of-place) "abc": not a finite number ≥ 0`},
		{"negative time", miniHeader + strings.Replace(miniRow1, "12.00", "-12.0", 1), `neg.txt:4: time (out-of-place) "-12.0": not a finite number ≥ 0`},
		{"inf", miniHeader + strings.Replace(miniRow1, "11.90", "  inf", 1), `inf.txt:4: time (in-place) "inf": not a finite number ≥ 0`},
		{"wrong", miniHeader + strings.Replace(miniRow1, "0.09       0\n", "0.09     1.5\n", 1), `wrong.txt:4: #wrong (in-place) "1.5": not a count ≥ 0 or N/A`},
		{"not increasing", miniHeader + miniRow2 + miniRow1, "down.txt:5: size 1024 is not above the previous row's 2048 (line 4)"},
		{"two runs", miniHeader + miniRow1 + "# Collective test starting: all_reduce_perf\n", "two.txt:5: a second run starts (all_reduce_perf)"},
		{"threads", strings.Replace(miniHeader, "nGpus 2", "nGpus 99999999999", 1) + miniRow1, "threads.txt:3: nThread 1, nGpus 99999999999: more than 1024 per process"},
		{"avg", miniHeader + miniRow1 + "# Avg bus bandwidth    : nan \n", `avg.txt:5: Avg bus bandwidth "nan"`},
	} {
		name := strings.Fields(tc.want)[0]
		name = name[:strings.Index(name, ".txt")+4]
		_, err := ParseOutput(strings.NewReader(tc.in), name)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v; want prefix %q", tc.name, err, tc.want)
		}
	}
}

func TestParseOutputRefusesHugeFiles(t *testing.T) {
	big := strings.NewReader(miniHeader + miniRow1 + strings.Repeat("node-a:1:1 [0] NCCL INFO padding padding padding\n", MaxOutputBytes/40))
	if _, err := ParseOutput(big, "big.log"); err == nil || !strings.HasPrefix(err.Error(), "big.log: larger than 16 MiB") {
		t.Errorf("huge file: %v", err)
	}
}
