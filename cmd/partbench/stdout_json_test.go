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

// Output files are probed before any work, and errors name the flag and the
// path given, never a temporary file.
func TestOutputPathsCheckedFirst(t *testing.T) {
	missing := t.TempDir() + "/no/such/folder/out.json"
	for _, args := range [][]string{
		{"model", "--dry-run", "--trace", missing},
		{"model", "--dry-run", "--output", missing},
		{"search", "--config", "test/single-tiny", "--output", missing},
		{"trace", "stats", "--output", missing, "x.json"},
		{"generate", "--model-dir", "x", "--ids-file", "y", "--logits-out", missing},
	} {
		_, _, err := runCLISplit(t, args...)
		flag := args[len(args)-2]
		if args[0] == "trace" {
			flag = "--output"
		}
		if err == nil || !strings.HasPrefix(err.Error(), flag+" "+missing+": cannot create "+missing+": folder ") || strings.Contains(err.Error(), ".tmp") {
			t.Errorf("%v: %v", args, err)
		}
	}
	// A directory given as a file is refused as such.
	if _, _, err := runCLISplit(t, "model", "--dry-run", "--output", t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("--output DIR: %v", err)
	}
}
