package report

import (
	"bytes"
	"testing"

	"github.com/partbench/partbench/exec"
)

func TestGenerateJSON(t *testing.T) {
	var b bytes.Buffer
	r := exec.GenerateResult{Config: "c", Plan: "tp 2", GreedyIDs: [][]int{{7, 8}}}
	if err := GenerateJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	// The schema first, then the result's own fields, two-space indented.
	if want := "{\n  \"schema\": \"partbench.generate/v1\",\n  \"config\": \"c\",\n  \"plan\": \"tp 2\",\n  \"greedy_ids\": [\n    [\n      7,\n      8\n    ]\n  ]"; !bytes.HasPrefix(b.Bytes(), []byte(want)) {
		t.Errorf("got\n%s\nwant a prefix\n%s", b.String(), want)
	}
}
