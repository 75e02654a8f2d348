package suite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every file a suite writes names its layout: runs.jsonl lines, spec.json
// and results.json; a file of another layout is refused, naming it; files
// written before the schema was recorded still read.
func TestSuiteFilesCarryTheirSchema(t *testing.T) {
	dir := t.TempDir()
	s, err := Load("quick")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSpec(dir, s); err != nil {
		t.Fatal(err)
	}
	var head struct {
		Schema string `json:"schema"`
		Name   string `json:"name"`
	}
	b, err := os.ReadFile(filepath.Join(dir, SpecFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &head); err != nil || head.Schema != SpecSchema || head.Name != s.Name {
		t.Fatalf("spec.json: %v %+v", err, head)
	}
	if back, err := ReadSpec(dir); err != nil || back.Hash() != s.Hash() {
		t.Fatalf("spec.json read back: %v", err)
	}
	os.WriteFile(filepath.Join(dir, SpecFile), []byte(strings.Replace(string(b), SpecSchema, "partbench.suite-spec/v9", 1)), 0o644)
	if _, err := ReadSpec(dir); err == nil || !strings.Contains(err.Error(), `schema "partbench.suite-spec/v9"`) {
		t.Errorf("a spec.json of another layout: %v", err)
	}

	log, _, err := OpenLog(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Append(Record{Spec: "quick", Cell: "local/smoke"}); err != nil {
		t.Fatal(err)
	}
	log.Close()
	path := filepath.Join(dir, RunsFile)
	line, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(line), `{"schema":"`+RecordSchema+`"`) {
		t.Errorf("runs.jsonl line %s", line)
	}
	// An older line without the key reads; a foreign one is refused.
	os.WriteFile(path, []byte(`{"spec":"quick","cell":"a"}`+"\n"), 0o644)
	if recs, _, err := ReadLog(path); err != nil || len(recs) != 1 {
		t.Errorf("a line without schema: %v", err)
	}
	os.WriteFile(path, []byte(`{"schema":"x/v2","spec":"quick","cell":"a"}`+"\n"), 0o644)
	if _, _, err := ReadLog(path); err == nil || !strings.Contains(err.Error(), `:1: schema "x/v2"`) {
		t.Errorf("a foreign line: %v", err)
	}
	res, err := Analyze(s, nil)
	if err != nil || res.Schema != ResultsSchema {
		t.Errorf("results: %v, schema %q", err, res.Schema)
	}
}
