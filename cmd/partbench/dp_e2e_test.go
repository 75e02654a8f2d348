package main

import (
	"testing"
	"time"
)

// Two replicas of a TP=2 group under the local launcher, over TCP: every
// rank's counts equal its Program's (checkRunDoc: no problems, every exact
// row unflagged), results name each rank's replica, and the logical calls
// per micro-batch are one replica's: 8 layers × 2 all-reduces + the
// embedding's all-reduce + the logits' all-gather = 18.
func TestLocalLauncherReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	dir := t.TempDir()
	r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "run", "--nproc", "4", "--config", "test/tp2-dp2-tiny", "--backend", "cpu", "--out", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.out)
	}
	doc := readResults(t, dir)
	checkRunDoc(t, doc, 4)
	ranks := doc["measurement"].(map[string]any)["ranks"].([]any)
	for i, want := range []float64{0, 0, 1, 1} {
		if got := ranks[i].(map[string]any)["replica"]; got != want {
			t.Errorf("rank %d: replica %v, want %v", i, got, want)
		}
	}
	found := false
	for _, row := range doc["comparison"].([]any) {
		m := row.(map[string]any)
		if m["metric"] == "collective_calls_per_microbatch" {
			found = true
			if m["modeled"] != 18.0 {
				t.Errorf("modeled logical collectives %v, want 18", m["modeled"])
			}
		}
	}
	if !found {
		t.Fatal("no logical collective row")
	}
}
