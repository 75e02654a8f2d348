package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/exec/launch"
)

// TestGenerateBindTo: generate --nproc 2 --tp 2 on the CPU backend binds its
// ranks as run does (--bind-to auto) and says so in the output's notes —
// rank 0 bound to its block where the affinity mask has at least 2 CPUs,
// "not bound" where it has one — and gives transformers' greedy ids all the
// same; --bind-to none leaves no note; a mode that is none of the three, or
// --bind-to where every rank runs in this process, is refused naming the
// flag.
func TestGenerateBindTo(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	dir, _ := filepath.Abs(filepath.Join("..", "..", "checkpoint", "testdata", "llama-tiny"))
	ref, ids := readHFReference(t, dir)
	cpus, err := launch.UsableCPUs()
	if err != nil {
		t.Fatal(err)
	}
	want := "not bound" // 2 local ranks on 1 CPU
	if len(cpus) >= 2 {
		want = "local rank 0 to "
	}
	for _, mode := range []string{"", "none"} {
		logits := filepath.Join(t.TempDir(), "logits.json")
		args := []string{"generate", "--model-dir", dir, "--ids-file", ids,
			"--new-tokens", fmt.Sprint(len(ref.GreedyIDs[0])), "--tp", "2", "--nproc", "2", "--logits-out", logits}
		if mode != "" {
			args = append(args, "--bind-to", mode)
		}
		r := runCmd(t, 2*time.Minute, cleanEnv(), bin, args...)
		if r.code != 0 {
			t.Fatalf("--bind-to %q: exit %d\n%s", mode, r.code, r.out)
		}
		checkGenerateOutput(t, ref, r.out, logits)
		var got struct {
			Notes []string `json:"notes"`
		}
		if err := json.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(got.Notes, "\n")
		switch mode {
		case "":
			if !strings.Contains(notes, "--bind-to auto: ") || !strings.Contains(notes, want) {
				t.Errorf("--bind-to auto on %d CPUs: notes %q, want one with %q", len(cpus), notes, want)
			}
		case "none":
			if strings.Contains(notes, "--bind-to") {
				t.Errorf("--bind-to none: notes %q", notes)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tp", "2", "--nproc", "2", "--bind-to", "socket"}, `--bind-to "socket": allowed auto, none, core`},
		{[]string{"--tp", "2", "--bind-to", "core"}, "--bind-to core: without --nproc or a launcher the 2 ranks run in this process"},
	} {
		r := runCmd(t, time.Minute, cleanEnv(), bin, append([]string{"generate", "--model-dir", dir, "--ids-file", ids}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.out, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", c.args, r.code, c.want, r.out)
		}
	}
}
