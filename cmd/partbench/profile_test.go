package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PARTBENCH_PROFILE_DIR: a dry run writes one CPU profile, model-PID.pprof,
// (gzip-compressed, as pprof writes them); run --nproc-per-node 1 writes one
// for the launcher and one for its rank; the root command's is named
// partbench-PID.pprof; a folder that cannot be
// made is refused (exit 2) naming the variable.
func TestProfileDir(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	dir := t.TempDir()
	if r := runCmd(t, time.Minute, cleanEnv(ProfileDirEnv+"="+dir), bin, "model", "--dry-run", "--config", "test/single-tiny"); r.code != 0 {
		t.Fatalf("model: exit %d\n%s", r.code, r.out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "model-*.pprof"))
	if len(files) != 1 {
		t.Fatalf("profiles %v, want one model-PID.pprof", files)
	}
	// A pprof profile is a gzip-compressed protocol buffer: magic 1f 8b.
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 20 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("%s: %d bytes, not a gzip-compressed profile", files[0], len(data))
	}

	runDir := t.TempDir()
	if r := runCmd(t, 2*time.Minute, cleanEnv(ProfileDirEnv+"="+runDir), bin, "run", "--nproc-per-node", "1", "--backend", "cpu",
		"--config", "test/single-tiny", "--iterations", "2", "--warmup", "1", "--output-dir", "", "--quiet"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.out)
	}
	if files, _ := filepath.Glob(filepath.Join(runDir, "run-*.pprof")); len(files) != 2 {
		t.Errorf("run --nproc-per-node 1 wrote %v, want two run-PID.pprof (the launcher, its rank)", files)
	}

	// The root command run as mpirun starts it: named partbench, not by a
	// flag's value (test/single-tiny).
	rootDir := t.TempDir()
	if r := runCmd(t, 2*time.Minute, cleanEnv(ProfileDirEnv+"="+rootDir), bin, "--config", "test/single-tiny", "--backend", "cpu",
		"--iterations", "1", "--warmup", "0", "--output-dir", "", "--quiet"); r.code != 0 {
		t.Fatalf("partbench --config: exit %d\n%s", r.code, r.out)
	}
	if files, _ := filepath.Glob(filepath.Join(rootDir, "*.pprof")); len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), "partbench-") {
		t.Errorf("partbench --config test/single-tiny wrote %v, want one partbench-PID.pprof", files)
	}

	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCmd(t, time.Minute, cleanEnv(ProfileDirEnv+"="+filepath.Join(blocker, "sub")), bin, "model", "--dry-run", "--config", "test/single-tiny")
	if r.code != 2 || !strings.Contains(r.out, ProfileDirEnv) {
		t.Errorf("a folder under a file: exit %d, want 2 naming %s:\n%s", r.code, ProfileDirEnv, r.out)
	}
}
