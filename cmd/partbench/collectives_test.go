package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const measuredFixture = "../../nccltests/testdata/all_reduce_8.txt"

// --measured: the collective and rank count come from the file; a -g or a
// collective that disagrees is refused, as are sweep-only flags; a missing
// file is named.
func TestCollectivesMeasured(t *testing.T) {
	t.Setenv("NCCL_ALGO", "")
	t.Setenv("NCCL_PROTO", "")
	out, err := runCLI(t, "collectives", "--measured", measuredFixture+","+measuredFixture, "--topology", "dgx-h100x2", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string `json:"schema"`
		Files  []struct {
			Ranks int        `json:"ranks"`
			Rows  []struct{} `json:"rows"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != "partbench.collectives-compare/v1" || len(doc.Files) != 2 || doc.Files[1].Ranks != 8 || len(doc.Files[1].Rows) != 11 {
		t.Fatalf("json: %v\n%s", err, out)
	}
	// Agreeing -g and collective are accepted.
	if _, err := runCLI(t, "collectives", "all_reduce_perf", "-g", "8", "--measured", measuredFixture); err != nil {
		t.Errorf("agreeing -g 8 all_reduce_perf: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-g", "4"}, "all_reduce_8.txt: the file ran 8 ranks, -g/--ngpus is 4"},
		{[]string{"all_gather"}, `all_reduce_8.txt: the file is all_reduce_perf (all_reduce), the collective given is "all_gather"`},
		{[]string{"--collective", "broadcast"}, `the collective given is "broadcast"`},
		{[]string{"-b", "1M"}, "-b/--minbytes with --measured: "},
		{[]string{"--dtype", "half"}, "-d/--datatype with --measured: "},
		{[]string{"--topology", "nvl16", "--measured", missing}, "read --measured: stat " + missing + ": no such file"},
		// A device is refused before it is read (it never ends).
		{[]string{"--topology", "nvl16", "--measured", "/dev/zero"}, "read --measured /dev/zero: not a regular file (a character device)"},
	} {
		_, err := runCLI(t, append([]string{"collectives", "--measured", measuredFixture}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.args, err, tc.want)
		}
	}
}

// --fit: the fitted constants come back, in json with the errors before and
// after (after never above before: the fit starts from the current constants
// and moves only on a strict improvement), and in the table as a
// [topology.collectives] section that a config accepts. Without --measured,
// or with csv, it is refused.
func TestCollectivesFit(t *testing.T) {
	t.Setenv("NCCL_ALGO", "")
	t.Setenv("NCCL_PROTO", "")
	out, err := runCLI(t, "collectives", "--measured", measuredFixture, "--topology", "dgx-h100x2", "--fit", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Fit struct {
			Points int                   `json:"points"`
			Before struct{ Max float64 } `json:"before"`
			After  struct{ Max float64 } `json:"after"`
			Tuning map[string]any        `json:"tuning"`
		} `json:"fit"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Fit.Points == 0 || doc.Fit.After.Max > doc.Fit.Before.Max || len(doc.Fit.Tuning) < 6 {
		t.Fatalf("fit: %+v", doc.Fit)
	}

	out, err = runCLI(t, "collectives", "--measured", measuredFixture, "--topology", "dgx-h100x2", "--fit")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(out, "[topology.collectives]")
	if i < 0 {
		t.Fatalf("no section in:\n%s", out)
	}
	// Byte counts are written as integers (the grid's half sizes are whole bytes).
	if !regexp.MustCompile(`(?m)^ramp_simple_half_bytes = [0-9]+$`).MatchString(out[i:]) || !regexp.MustCompile(`(?m)^ramp_ll_half_bytes = [0-9]+$`).MatchString(out[i:]) {
		t.Errorf("byte counts not written as integers:\n%s", out[i:])
	}
	// The section, pasted into a config, parses and validates.
	cfg := "version = 1\n[model]\npreset = \"seed-dense16\"\n[workload]\nbatch = 8\ncontext = 256\noutput_tokens = 16\n" +
		"[parallel]\ntp = 8\npp = 2\n[hardware]\npreset = \"h100-sxm\"\n[run]\niterations = 1\n[topology]\npreset = \"dgx-h100x2\"\n" + out[i:]
	path := filepath.Join(t.TempDir(), "tuned.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "model", "--dry-run", "--config", path); err != nil {
		t.Errorf("a config with the fitted section: %v\n%s", err, cfg)
	}

	// A sendrecv run fits too: its group is the pair from rank 0 to rank
	// N−1 (here 3), as the compare models it (numbers made up, 1 and 2 MiB).
	sr := filepath.Join(t.TempDir(), "sendrecv.txt")
	srText := "# Collective test starting: sendrecv_perf\n# nThread 1 nGpus 4 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"#  Rank  0 Group  0 Pid 1 on node-a device  0 [0000:19:00] NVIDIA H100 80GB HBM3\n#  Rank  1 Group  0 Pid 1 on node-a device  1 [0000:3b:00] NVIDIA H100 80GB HBM3\n" +
		"#  Rank  2 Group  0 Pid 1 on node-a device  2 [0000:4c:00] NVIDIA H100 80GB HBM3\n#  Rank  3 Group  0 Pid 1 on node-a device  3 [0000:5d:00] NVIDIA H100 80GB HBM3\n" +
		"     1048576        262144     float     sum      -1    12.00   87.38   87.38       0    12.00   87.38   87.38       0\n" +
		"     2097152        524288     float     sum      -1    18.00  116.51  116.51       0    18.00  116.51  116.51       0\n"
	if err := os.WriteFile(sr, []byte(srText), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCLI(t, "collectives", "--measured", sr, "--fit"); err != nil || !strings.Contains(out, "[topology.collectives]") {
		t.Errorf("sendrecv --fit: %v\n%s", err, out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"collectives", "--fit"}, "--fit: fits the model to measurements, so it needs --measured FILE"},
		{[]string{"collectives", "--measured", measuredFixture, "--fit", "--format", "csv"}, "--fit with --format csv"},
	} {
		if _, err := runCLI(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.args, err, tc.want)
		}
	}
}

// An nccl-tests command line is taken whole: every flag all_reduce_perf
// takes is accepted, the ones in its header line are printed there, the
// rest echoed; -t × -g is the rank count; -r is the root of reduce; the
// algorithm column has NCCL's names and stays aligned with the header.
func TestCollectivesTakeNCCLTestsCommandLines(t *testing.T) {
	out, err := runCLI(t, "collectives", "reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-t", "2", "-g", "4", "-c", "0", "-G", "3",
		"-z", "1", "-a", "2", "-m", "4", "-r", "5", "-p", "1", "-C", "0", "-T", "10", "-N", "0", "-R", "1", "-y", "0", "--topology", "dgx-h100x2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "# nThread 2 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 4 validation: 0 graph: 3\n") {
		t.Errorf("header line:\n%s", out)
	}
	if !strings.Contains(out, "also given -z 1 -y 0 -a 2 -p 1 -R 1 -N 0 -T 10") {
		t.Errorf("echo line:\n%s", out)
	}
	// 2 threads × 4 GPUs = 8 ranks, 0..7.
	if !strings.Contains(out, "#  Rank  7 ") || strings.Contains(out, "#  Rank  8 ") {
		t.Errorf("want ranks 0..7:\n%s", out)
	}
	var header []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "#       size") {
			header = strings.Fields(l)
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 15 || f[4] != "5" {
			t.Fatalf("row %q: want 15 fields and root 5", l)
		}
		if algo := f[13]; algo != "Ring" && algo != "Tree" && algo != "NVLS" && algo != "NVLSTree" {
			t.Errorf("algo %q is not one of NCCL's names", algo)
		}
		// Right-aligned columns: the algo name ends where the header's "algo" ends.
		if i, j := strings.Index(out, "algo   proto"), 0; i < 0 {
			t.Fatalf("header lacks algo/proto:\n%s", out)
		} else {
			hdr := out[strings.LastIndex(out[:i], "\n")+1:]
			hdr = hdr[:strings.Index(hdr, "\n")]
			j = strings.Index(hdr, "algo") + len("algo")
			if !strings.HasSuffix(l[:j], f[13]) {
				t.Errorf("algo %q not aligned under the header in %q", f[13], l)
			}
		}
	}
	if len(header) == 0 {
		t.Fatalf("no column header:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-C", "1"}, "-C/--report_cputime 1: nccl-tests then reports the host's CPU time"},
		{[]string{"-a", "4"}, "-a/--average: must be from 0 to 3 (got 4)"},
		{[]string{"broadcast", "-g", "4", "-r", "4"}, "-r/--root 4: must be a rank of the group, 0 to 3"},
		{[]string{"-t", "0"}, "-t/--nthreads: must be from 1"},
		{[]string{"-t", "2", "--ranks", "8"}, "--ranks with -g/-t"},
		{[]string{"-g", "64", "--topology", "dgx-h100x2"}, "-g/--ngpus 64 (× -t 1): 64 ranks, but topology \"dgx-h100x2\" has 16 GPUs"},
	} {
		if _, err := runCLI(t, append([]string{"collectives"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("collectives %v: %v, want %q", c.args, err, c.want)
		}
	}
}
