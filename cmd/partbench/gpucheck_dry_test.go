package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scripts/gpu-check.sh --dry-run checks, without a GPU, that every partbench
// command and config the device call uses exists in this build, and writes
// its report and JSON: the script cannot drift from the CLI while no GPU is
// at hand.
func TestGPUCheckDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the device script's dry mode")
	}
	bin := partbenchBinary(t)
	script, err := filepath.Abs("../../scripts/gpu-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	env := cleanEnv("PARTBENCH=" + bin)
	r := runCmd(t, 3*time.Minute, env, "bash", script, "--dry-run", out)
	if r.code != 0 {
		t.Fatalf("dry run exited %d:\n%s", r.code, r.out)
	}
	b, err := os.ReadFile(filepath.Join(out, "steps.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string `json:"schema"`
		DryRun bool   `json:"dry_run"`
		Steps  []struct {
			Step, Status, Command string
		} `json:"steps"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("steps.json: %v\n%s", err, b)
	}
	checked := map[string]bool{}
	for _, s := range doc.Steps {
		if s.Status == "checked" {
			checked[s.Step] = true
		}
	}
	for _, want := range []string{"nccl-check", "check-tp8pp2-tiny-bf16", "check-gpt2-tiny-fp16", "single-seed4", "trace-stats-seed4",
		"single-seed4-b1", "startup-seed16", "emulate-1rank", "calibrate-cuda", "model-calibrated", "single-seed4-cal", "l2-measure",
		"generate-llama-tiny-bf16", "check-modeldir-gpt2-tiny-fp16", "resume-cuda", "serve-cuda", "remote-cuda", "serving-grpc", "serving-tcp", "without-seed4-b1",
		"calibrate-agree", "agree-tp8pp2", "calibrate-tiny", "agree-single-tiny", "agree-tp2pp2-tiny", "agree-tp2-dp2-tiny"} {
		if !checked[want] {
			t.Errorf("step %s not checked: %+v", want, doc.Steps)
		}
	}
	if doc.Schema != "partbench.gpu-check/v1" || !doc.DryRun {
		t.Errorf("schema %q, dry run %v", doc.Schema, doc.DryRun)
	}
	if rep, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(rep), "| step | status | seconds | limit | command |") {
		t.Errorf("report.md: %v\n%s", err, rep)
	}

	// A build whose run lacks --dtype fails the dry run, naming the flag.
	fake := filepath.Join(t.TempDir(), "partbench")
	wrapper := "#!/bin/sh\nif [ \"$1\" = run ] && [ \"$2\" = --help ]; then \"" + bin + "\" run --help | grep -v -- --dtype; exit 0; fi\nexec \"" + bin + "\" \"$@\"\n"
	if err := os.WriteFile(fake, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runCmd(t, 3*time.Minute, cleanEnv("PARTBENCH="+fake), "bash", script, "--dry-run", t.TempDir(), "check")
	if r.code != 1 || !strings.Contains(r.out, "missing: --dtype") {
		t.Errorf("a build without --dtype: exit %d\n%s", r.code, r.out)
	}
}
