package claims

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/sim"
)

func TestLoadEmbeddedAndMissing(t *testing.T) {
	f, err := Load("seed-004")
	if err != nil || len(f.Claims) == 0 {
		t.Fatalf("Load(seed-004) = %v, %v", f, err)
	}
	if _, err := Load("no-such-claims"); err == nil || !strings.Contains(err.Error(), "embedded: ") {
		t.Errorf("missing: %v", err)
	}
}

func TestJudgeAllAndFirstInconsistent(t *testing.T) {
	f, err := Load("seed-004")
	if err != nil {
		t.Fatal(err)
	}
	js, err := JudgeAll("seed-004", f, sim.Options{})
	if err != nil || len(js) == 0 {
		t.Fatalf("JudgeAll: %d judgements, %v", len(js), err)
	}
	j := FirstInconsistent(js)
	for i := range js {
		if js[i].Verdict != Consistent {
			if j != &js[i] {
				t.Errorf("FirstInconsistent = %v, want judgement %d", j, i)
			}
			return
		}
	}
	if j != nil {
		t.Errorf("all consistent, FirstInconsistent = %v", j)
	}
}
