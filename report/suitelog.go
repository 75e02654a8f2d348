package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/partbench/partbench/suite"
)

// SuiteFromLog regenerates every suite output in dir from dir's spec and
// run log (suite.RunsFile), prints the Markdown summary to w and the list
// of files written.
func SuiteFromLog(w io.Writer, dir string) error {
	s, err := suite.ReadSpec(dir)
	if err != nil {
		return err
	}
	recs, _, err := suite.ReadLog(filepath.Join(dir, suite.RunsFile))
	if err != nil {
		return err
	}
	res, err := suite.Analyze(s, recs)
	if err != nil {
		return err
	}
	if err := WriteSuite(dir, res); err != nil {
		return err
	}
	if err := SuiteMarkdown(w, res); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwrote %s/{%s}\n", filepath.Clean(dir), strings.Join(SuiteFiles, ","))
	return nil
}

// SuitePlan prints the one-line plan of s before it runs: the matrix, the
// runs it makes and the model's estimate of their duration.
func SuitePlan(w io.Writer, s *suite.Spec, est time.Duration) {
	cells := len(s.RunCells())
	fmt.Fprintf(w, "suite %s: %d baselines × %d workloads × (%d warm-up + %d runs) = %d runs; the model's estimate on %s over %s: %s (the model's figure on the %s backend's device: real runs add framework overhead, a CPU far more)\n",
		s.Name, len(s.Baselines), len(s.Workloads), s.Warmup, s.Runs, cells*(s.Warmup+s.Runs), s.Hardware, s.Link, est.Round(time.Millisecond), s.Backend)
}
