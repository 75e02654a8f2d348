package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// runCLISplit runs the command with standard output and error apart.
func runCLISplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errb.String(), err
}

// --format json writes only JSON to standard output; where files went is
// said on standard error.
func TestJSONStdoutIsOnlyJSON(t *testing.T) {
	dir := t.TempDir()
	out, errs, err := runCLISplit(t, "resume", "--strategies", "recompute,offload", "--layers", "1", "--trials", "1", "--warmup", "0",
		"--output-dir", dir, "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Errorf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if !strings.Contains(errs, "wrote "+dir) {
		t.Errorf("stderr does not say where the files went: %q", errs)
	}
}
