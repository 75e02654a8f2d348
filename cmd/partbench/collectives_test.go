package main

import (
	"encoding/json"
	"path/filepath"
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
		{[]string{"--topology", "nvl16", "--measured", missing}, "--measured: open " + missing + ": no such file"},
	} {
		_, err := runCLI(t, append([]string{"collectives", "--measured", measuredFixture}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.args, err, tc.want)
		}
	}
}
