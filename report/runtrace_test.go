package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/exec"
)

func TestWriteModelTraceEqualsTheSpansOfEachEstimate(t *testing.T) {
	es := tinyEstimates(t, "test/tp2pp2-tiny", "test/single-tiny")
	for _, full := range []bool{false, true} {
		steps := TraceDecodeSteps
		if full {
			steps = -1
		}
		var spans []Span
		for _, e := range es {
			spans = append(spans, EstimateSpansUpTo(e, steps)...)
		}
		var want bytes.Buffer
		if err := ChromeTrace(&want, spans); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "trace.json")
		if err := WriteModelTrace(p, es, full); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("full %v: the file differs from ChromeTrace of the estimates' spans (%v)", full, err)
		}
	}
}

func TestWriteChecksJoinsFailures(t *testing.T) {
	pass := exec.CheckResult{Config: "a", Pass: true}
	fail := exec.CheckResult{Config: "b", Failures: []string{"logits differ"}}
	var out bytes.Buffer
	err := WriteChecks(&out, FormatTable, "run --check", "dev", pass, fail)
	if err == nil || err.Error() != "check b failed: logits differ" {
		t.Errorf("error %v, want b's failure alone", err)
	}
	if s := out.String(); !strings.Contains(s, "Check a:") || !strings.Contains(s, "PASS") || !strings.Contains(s, "Check b:") || !strings.Contains(s, "FAIL") {
		t.Errorf("tables:\n%s", s)
	}
	out.Reset()
	if err := WriteChecks(&out, FormatTable, "run --check", "dev", pass); err != nil || !strings.Contains(out.String(), "Check a:") {
		t.Errorf("all pass: %v\n%s", err, out.String())
	}
}
