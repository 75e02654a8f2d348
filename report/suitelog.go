package report

import (
	"fmt"
	"io"
	"time"

	"github.com/partbench/partbench/suite"
)

// SuitePlan prints the one-line plan of s before it runs: the matrix, the
// runs it makes and the model's estimate of their duration.
func SuitePlan(w io.Writer, s *suite.Spec, est time.Duration) {
	cells := len(s.RunCells())
	fmt.Fprintf(w, "suite %s: %d baselines × %d workloads × (%d warm-up + %d runs) = %d runs; the model's estimate on %s over %s: %s (the model's figure on the %s backend's device: real runs add framework overhead, a CPU far more)\n",
		s.Name, len(s.Baselines), len(s.Workloads), s.Warmup, s.Runs, cells*(s.Warmup+s.Runs), s.Hardware, s.Link, est.Round(time.Millisecond), s.Backend)
}
